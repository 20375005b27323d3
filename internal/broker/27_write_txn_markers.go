package broker

// WriteTxnMarkers (key 27), version 1 (flexible).
//
// Sent by transaction coordinators (and admin aborts) to partition
// leaders: each marker is appended to each of its partitions led here as
// a control batch (klog.Log.AppendMarker: refused with
// INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED when fenced)
// and answered once committed (acks=all); a partition not led here gets
// NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION. A marker for a
// __consumer_offsets partition also ends the transaction's pending
// offsets there (group coordinator). The principal needs CLUSTER_ACTION
// or ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every
// partition).

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	az := b.authz(req)
	allowed := az.cluster(kmsg.ACLOperationClusterAction) || az.cluster(kmsg.ACLOperationAlter)
	s := b.view()
	return protocol.Response{Later: func() kmsg.Response {
		// Bounded as the coordinator's own wait (it asks again after).
		ctx, cancel := context.WithTimeout(ctx, markerTimeout)
		defer cancel()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, m := range r.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
			for i, t := range m.Topics {
				rt := &rm.Topics[i]
				*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
				for j, p := range t.Partitions {
					rp := &rt.Partitions[j]
					*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition = p
					if !allowed {
						rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
						continue
					}
					if m.ProducerID < 0 || m.ProducerEpoch < 0 {
						rp.ErrorCode = kerr.InvalidRequest.Code
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						err := b.writeMarkerLocally(ctx, s, txn.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
							CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Committed}, txn.TopicPartition{Topic: t.Topic, Partition: p})
						code := errorCode(err)
						mu.Lock()
						rp.ErrorCode = code
						mu.Unlock()
					}()
				}
			}
			resp.Markers = append(resp.Markers, rm)
		}
		wg.Wait()
		return resp
	}}
}
