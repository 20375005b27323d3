package broker

// SyncGroup (key 14), versions 0–5 (flexible from v4; v5 checks the
// protocol type and name). A follower's response waits for the leader's
// assignment, which is written to __consumer_offsets first. The request
// takes effect as it arrives; only the answer waits.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleSyncGroup(ctx context.Context, req *protocol.Request) protocol.Response {
	wait := b.groups.StartSync(req.Body.(*kmsg.SyncGroupRequest))
	return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
}
