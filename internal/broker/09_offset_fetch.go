package broker

// OffsetFetch (key 9), versions 1–7 (flexible from v6): one group per
// request. Topics null (v2+) asks for every committed partition.
// RequireStable (v7) needs no waiting: there are no transactions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetFetch(_ context.Context, req *protocol.Request) protocol.Response {
	return reply(b.groups.FetchOffsets(req.Body.(*kmsg.OffsetFetchRequest)))
}
