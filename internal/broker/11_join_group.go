package broker

// JoinGroup (key 11), versions 0–9 (flexible from v6). v4+ first answers
// a member without an id MEMBER_ID_REQUIRED with one (KIP-394); v5+
// carries group.instance.id (static membership, KIP-345); v8 adds a
// reason (logged nowhere yet); v9 lets a returning static leader skip the
// assignment (KIP-814). The join takes effect as it arrives; the response
// waits for the rebalance (internal/group).
// With an authorizer it needs READ on the group (else
// GROUP_AUTHORIZATION_FAILED).

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleJoinGroup(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.JoinGroupRequest)
	clientID, host := "", ""
	if req.ClientID != nil {
		clientID = *req.ClientID
	}
	if req.Conn != nil && req.Conn.Remote != nil {
		host = "/" + req.Conn.Remote.String()
		if h, _, err := net.SplitHostPort(req.Conn.Remote.String()); err == nil {
			host = "/" + h
		}
	}
	if !b.authz(req).group(kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return reply(resp)
	}
	wait := b.groups.StartJoin(r, clientID, host)
	return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
}
