package broker

// OffsetDelete (key 47), version 0. Offsets of topics the group's members
// subscribe to cannot be deleted (GROUP_SUBSCRIBED_TO_TOPIC).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	return protocol.Response{Later: func() kmsg.Response { return b.groups.DeleteOffsets(ctx, r) }}
}
