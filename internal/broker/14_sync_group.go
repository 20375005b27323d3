package broker

// SyncGroup (key 14), versions 0–5 (flexible from v4; v5 checks the
// protocol type and name). A follower's response waits for the leader's
// assignment, which is written to __consumer_offsets first. The request
// takes effect as it arrives; only the answer waits.
// With an authorizer it needs READ on the group (else
// GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleSyncGroup(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.SyncGroupRequest)
	if r.Version >= 5 && (r.ProtocolType == nil || r.Protocol == nil) {
		// Mandatory from v5: Kafka's KafkaApis.handleSyncGroupRequest
		// refuses their absence before anything else.
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return reply(resp)
	}
	if !b.authz(req).group(kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply(resp)
	}
	wait := b.groups.StartSync(r)
	return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
}
