package broker

// Heartbeat (key 12), versions 0–4 (flexible from v4).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleHeartbeat(_ context.Context, req *protocol.Request) protocol.Response {
	return reply(b.groups.Heartbeat(req.Body.(*kmsg.HeartbeatRequest)))
}
