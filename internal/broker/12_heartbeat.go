package broker

// Heartbeat (key 12), versions 0–4 (flexible from v4).
// With an authorizer it needs READ on the group (else
// GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleHeartbeat(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.HeartbeatRequest)
	if !b.authz(req).group(kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply(resp)
	}
	return reply(b.groups.Heartbeat(r))
}
