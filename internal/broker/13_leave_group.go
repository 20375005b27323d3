package broker

// LeaveGroup (key 13), versions 0–4 (flexible from v4). v3+ removes a
// batch of members, each by member id or group.instance.id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleLeaveGroup(_ context.Context, req *protocol.Request) protocol.Response {
	return reply(b.groups.Leave(req.Body.(*kmsg.LeaveGroupRequest)))
}
