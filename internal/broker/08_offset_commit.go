package broker

// OffsetCommit (key 8), versions 2–8 (flexible from v8). Offsets are
// written to __consumer_offsets and acknowledged once committed there
// (acks=all); v6+ stores the leader epoch with the offset (KIP-320). The
// commit takes effect as it arrives (a pipelined OffsetFetch or LeaveGroup
// sees it); only the answer waits for the write.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetCommit(ctx context.Context, req *protocol.Request) protocol.Response {
	wait := b.groups.StartCommitOffsets(req.Body.(*kmsg.OffsetCommitRequest))
	return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
}
