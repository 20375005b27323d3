package broker

// DescribeCluster (key 60), versions 0–1 (flexible). v1 adds EndpointType;
// samsa has only broker endpoints (1). As in Kafka, the cluster is
// described to every principal; the authorized operations (when asked
// for) are those the ACLs allow, 0 without DESCRIBE on the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeCluster(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	if r.Version >= 1 && r.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "samsa has only broker endpoints"
		resp.ErrorMessage = &msg
		return reply(resp)
	}
	if r.IncludeClusterAuthorizedOperations {
		// As Kafka: 0 without DESCRIBE on the cluster.
		resp.ClusterAuthorizedOperations = 0
		if az := b.authz(req); az.cluster(kmsg.ACLOperationDescribe) {
			resp.ClusterAuthorizedOperations = az.authorizedOps(kmsg.ACLResourceTypeCluster, meta.ClusterResourceName, clusterOps)
		}
	}
	s := b.view()
	resp.ClusterID = s.ClusterID
	listed := map[int32]bool{}
	for _, id := range liveBrokers(s) {
		br := s.Brokers[id].Broker
		ep, ok := endpointFor(br, req)
		if !ok {
			continue
		}
		listed[id] = true
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port = br.ID, ep.Host, ep.Port
		if br.Rack != "" {
			rack := br.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	resp.ControllerID = controllerID(s, listed)
	return reply(resp)
}
