package broker

// OffsetDelete (key 47), version 0. Offsets of topics the group's members
// subscribe to cannot be deleted (GROUP_SUBSCRIBED_TO_TOPIC). The offsets
// are gone as the request arrives; the answer waits for the tombstones'
// commit.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, req *protocol.Request) protocol.Response {
	wait := b.groups.StartDeleteOffsets(req.Body.(*kmsg.OffsetDeleteRequest))
	return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
}
