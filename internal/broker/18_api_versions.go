package broker

// ApiVersions (key 18), versions 0–3 (flexible from v3).
//
// The response lists exactly the table in handler.go. A request for a
// version above 3 is decoded by the protocol server as v0 and flagged; it is
// answered in v0 with UNSUPPORTED_VERSION and the full table, so the client
// can retry with a version both sides know (KIP-511).
//
// v3 also carries the features (KIP-584): transaction.version is
// supported from 0 to 2 and finalized at the broker's transaction.version
// setting (2 by default: transactions v2, KIP-890 part 2; clients use v2
// only when it is finalized at 2), with finalized features epoch 1; at 0
// nothing is finalized (epoch -1), as a Kafka cluster that never set it.

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
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, 2
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	resp.FinalizedFeaturesEpoch = -1
	if level := b.cfg.TransactionVersion; level > 0 {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		resp.FinalizedFeaturesEpoch = 1
	}
	return reply(resp)
}

// transactionVersionFeature is the feature that tells clients to use
// transactions v2 (KIP-890 part 2).
const transactionVersionFeature = "transaction.version"
