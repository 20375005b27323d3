package broker

// OffsetFetch (key 9), versions 1–7 (flexible from v6): one group per
// request. Topics null (v2+) asks for every committed partition.
// RequireStable (v7) needs no waiting: there are no transactions. The
// offsets are read as the request arrives; if a write of the group is
// still being replicated, the answer waits for its commit.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, req *protocol.Request) protocol.Response {
	wait := b.groups.StartFetchOffsets(req.Body.(*kmsg.OffsetFetchRequest))
	return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
}
