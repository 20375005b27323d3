package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

// api is one implemented Kafka API: the versions samsa advertises (only
// those it implements correctly, see PROTOCOL.md) and its handler.
type api struct {
	min, max int16
	handle   func(b *Broker, ctx context.Context, req *protocol.Request) protocol.Response
}

// apis is the version table; ApiVersions is built from it. Each handler's
// file (NN_name.go, NN = API key) documents its per-version behaviour.
var apis map[int16]api

func init() {
	apis = map[int16]api{
		0:  {3, 12, (*Broker).handleProduce},
		1:  {4, 12, (*Broker).handleFetch},
		2:  {1, 7, (*Broker).handleListOffsets},
		3:  {0, 12, (*Broker).handleMetadata},
		8:  {2, 8, (*Broker).handleOffsetCommit},
		9:  {1, 8, (*Broker).handleOffsetFetch},
		10: {0, 4, (*Broker).handleFindCoordinator},
		11: {0, 9, (*Broker).handleJoinGroup},
		12: {0, 4, (*Broker).handleHeartbeat},
		13: {0, 4, (*Broker).handleLeaveGroup},
		14: {0, 5, (*Broker).handleSyncGroup},
		15: {0, 5, (*Broker).handleDescribeGroups},
		16: {0, 4, (*Broker).handleListGroups},
		17: {0, 1, (*Broker).handleSASLHandshake},
		18: {0, 3, (*Broker).handleApiVersions},
		19: {2, 7, (*Broker).handleCreateTopics},
		20: {1, 6, (*Broker).handleDeleteTopics},
		21: {0, 2, (*Broker).handleDeleteRecords},
		22: {0, 4, (*Broker).handleInitProducerID},
		23: {2, 4, (*Broker).handleOffsetForLeaderEpoch},
		24: {0, 5, (*Broker).handleAddPartitionsToTxn},
		25: {0, 4, (*Broker).handleAddOffsetsToTxn},
		26: {0, 5, (*Broker).handleEndTxn},
		27: {1, 1, (*Broker).handleWriteTxnMarkers},
		28: {0, 5, (*Broker).handleTxnOffsetCommit},
		29: {0, 3, (*Broker).handleDescribeACLs},
		30: {0, 3, (*Broker).handleCreateACLs},
		31: {0, 3, (*Broker).handleDeleteACLs},
		32: {1, 4, (*Broker).handleDescribeConfigs},
		33: {0, 2, (*Broker).handleAlterConfigs},
		35: {0, 5, (*Broker).handleDescribeLogDirs},
		36: {0, 2, (*Broker).handleSASLAuthenticate},
		37: {0, 3, (*Broker).handleCreatePartitions},
		42: {0, 2, (*Broker).handleDeleteGroups},
		43: {0, 2, (*Broker).handleElectLeaders},
		44: {0, 1, (*Broker).handleIncrementalAlterConfigs},
		47: {0, 0, (*Broker).handleOffsetDelete},
		48: {0, 1, (*Broker).handleDescribeClientQuotas},
		49: {0, 1, (*Broker).handleAlterClientQuotas},
		50: {0, 0, (*Broker).handleDescribeUserScramCredentials},
		51: {0, 0, (*Broker).handleAlterUserScramCredentials},
		60: {0, 1, (*Broker).handleDescribeCluster},
		61: {0, 0, (*Broker).handleDescribeProducers},
		65: {0, 0, (*Broker).handleDescribeTransactions},
		66: {0, 1, (*Broker).handleListTransactions},
	}
}

// apiVersionRange tells the protocol server which requests to decode: the
// implemented ones, and those of the APIs samsa answers with an error
// (unserved.go), which ApiVersions does not list.
func apiVersionRange(key int16) (min, max int16, ok bool) {
	if a, ok := apis[key]; ok {
		return a.min, a.max, true
	}
	return unservedRange(key)
}

// Handle implements protocol.Handler.
func (b *Broker) Handle(ctx context.Context, req *protocol.Request) protocol.Response {
	a, ok := apis[req.Key]
	if !ok {
		// The protocol server passes only the keys apiVersionRange
		// reports: the rest are unserved.
		return handleUnserved(req)
	}
	return a.handle(b, ctx, req)
}

// reply wraps an immediate response.
func reply(r kmsg.Response) protocol.Response { return protocol.Response{Body: r} }
