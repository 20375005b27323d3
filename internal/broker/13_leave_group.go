package broker

// LeaveGroup (key 13), versions 0–4 (flexible from v4). v3+ removes a
// batch of members, each by member id or group.instance.id.
// With an authorizer it needs READ on the group (else
// GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleLeaveGroup(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	if !b.authz(req).group(kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply(resp)
	}
	return reply(b.groups.Leave(r))
}
