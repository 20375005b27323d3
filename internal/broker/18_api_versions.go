package broker

// ApiVersions (key 18), versions 0–3 (flexible from v3).
//
// The response lists exactly the table in handler.go. A request for a
// version above 3 is decoded by the protocol server as v0 and flagged; it is
// answered in v0 with UNSUPPORTED_VERSION and the full table, so the client
// can retry with a version both sides know (KIP-511).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleApiVersions(_ context.Context, req *protocol.Request) protocol.Response {
	resp := req.Body.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.UnsupportedVersion != 0 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	keys := make([]int, 0, len(apis))
	for k := range apis {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	for _, k := range keys {
		a := apis[int16(k)]
		v := kmsg.NewApiVersionsResponseApiKey()
		v.ApiKey, v.MinVersion, v.MaxVersion = int16(k), a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, v)
	}
	return reply(resp)
}
