package broker

// OffsetFetch (key 9), versions 1–7 (flexible from v6): one group per
// request. Topics null (v2+) asks for every committed partition.
// RequireStable (v7) changes nothing: there are no transactions, and no
// offset is served before it is committed. The offsets are read as the
// request arrives; unless they are known to be committed, the answer waits
// for their commit (up to offsets.commit.timeout.ms, then
// UNSTABLE_OFFSET_COMMIT from v7, COORDINATOR_LOAD_IN_PROGRESS before).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, req *protocol.Request) protocol.Response {
	wait := b.groups.StartFetchOffsets(req.Body.(*kmsg.OffsetFetchRequest))
	return protocol.Response{Later: func() kmsg.Response { return wait(ctx) }}
}
