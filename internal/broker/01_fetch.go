package broker

// Fetch (key 1), versions 4–12 (flexible from v12). Authorization:
// fetchAuthz.
//
// Consumers read whole batches below the high watermark (read_uncommitted)
// or the last stable offset (read_committed, IsolationLevel 1: every
// transaction below it is decided), and a read_committed fetch gets the
// aborted transactions of the range it reads, for the client to drop
// their records; control batches go to both, as in Kafka (clients skip
// them). Every partition answer carries the last stable offset. Limits follow KIP-74: MaxBytes for the
// response, PartitionMaxBytes per partition, except that the first batch of
// the first partition with data is returned even if it exceeds them.
// Whatever the request asks, a consumer's fetch returns at most
// fetch.max.bytes and a follower's at most replica.fetch.response.max.bytes
// (Kafka clamps both the same way), no partition more than that.
//
// Zero copy: the records are never read into memory. fetchOnce finds the
// batches to return by reading their headers only (klog.Log.Slice), the
// response is encoded here around them (rawFetchResponse, byte for byte as
// kmsg would), and the connection's writer sends the batches straight from
// the segment files with sendfile(2), in the response's place among the
// connection's pipelined responses (protocol.RawResponse). So a fetch holds
// nothing of the memory budget (queued.max.request.bytes) but its frames,
// whatever it returns. Should the log cut or delete the bytes between the
// answer and the send (a truncation after losing leadership, retention,
// compaction), the writer closes the connection rather than send other
// bytes, and the client fetches again (klog.Records).
//
// Long polling: when fewer than MinBytes are available and no partition has
// an error, the request waits (parked on the partitions' waiters, no thread
// spinning) until MinBytes arrive or MaxWaitMillis passes. A parked fetch
// holds no records: what it found is dropped and found again when the wait
// ends. MinBytes is taken as at most the response cap (MaxBytes,
// fetch.max.bytes), so a fetch asking for more than it may return is
// answered once it has all it may return; MaxWaitMillis is not clamped, as
// in Kafka. A PartitionMaxBytes of 0 or less still returns the first batch
// (as in Kafka).
//
// Sessions (KIP-227, v7+): samsa answers every request in full with session
// id 0, which tells clients that no session was created; they then keep
// sending full requests. As in Kafka, a request with session epoch 0
// (open a session) or -1 (no session) is a full fetch whatever session id
// it names (kafka-go sends id -1, epoch -1); any other epoch is an
// incremental fetch of a session, which samsa never has:
// FETCH_SESSION_ID_NOT_FOUND.
//
// v9+: CurrentLeaderEpoch is checked (FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH). v12: a LastFetchedEpoch that the log contradicts
// yields DivergingEpoch (the fetcher must truncate), as Kafka does.
//
// A consumer asking with Fetch v4–9 for zstd batches gets
// UNSUPPORTED_COMPRESSION_TYPE, as from Kafka: it could not decode them.
//
// A fetch with a replica id (>= 0) comes from a follower: it must be an
// assigned replica (else REPLICA_NOT_AVAILABLE) in the leader's epoch; its
// fetch offset is recorded as its durable LEO (replica.FollowerFetch), which
// may advance the high watermark and propose adding it to the ISR; it reads
// up to the LEO rather than the high watermark.

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/replica"
)

// fetchAuthz is what a fetch may read: a consumer the topics it may READ;
// a follower (ReplicaID >= 0) everything or nothing, as it has
// CLUSTER_ACTION on the cluster and came in on the inter-broker listener
// or not. Kafka answers a refused follower TOPIC_AUTHORIZATION_FAILED on
// every partition, and so does samsa; the listener check goes beyond
// Kafka and holds without an authorizer too, so that no client listener
// can pose as a follower and move a high watermark (CVE-2018-1288).
type fetchAuthz struct {
	az      authz
	replica bool // a follower's fetch may proceed
}

func (b *Broker) fetchAuthz(req *protocol.Request) fetchAuthz {
	fa := fetchAuthz{az: b.authz(req)}
	fa.replica = fa.az.cluster(kmsg.ACLOperationClusterAction) &&
		(req.Conn == nil || req.Conn.Listener == "" || req.Conn.Listener == b.lc.interBroker)
	return fa
}

func (fa fetchAuthz) allowed(r *kmsg.FetchRequest, topic string) bool {
	if r.ReplicaID >= 0 {
		return fa.replica
	}
	return fa.az.topic(kmsg.ACLOperationRead, topic)
}

func (b *Broker) handleFetch(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.FetchRequest)
	if r.Version >= 7 && r.SessionEpoch != 0 && r.SessionEpoch != -1 {
		// Only an incremental fetch names a session that must exist,
		// and samsa keeps none.
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return reply(resp)
	}
	fa := b.fetchAuthz(req)
	consumer := r.ReplicaID < 0
	if consumer {
		// A consumer over its quota gets no records and waits
		// (docs/quotas.md).
		if throttle := b.quotas.record(b.view(), meta.QuotaConsumerByteRate, req, 0, time.Now()); throttle > 0 {
			resp := r.ResponseKind().(*kmsg.FetchResponse)
			resp.ThrottleMillis = int32(throttle.Milliseconds())
			return protocol.Response{Body: resp, Throttle: throttle}
		}
		// No response larger than the quota's window allows (Kafka's
		// getMaxValueInQuotaWindow): one large fetch would otherwise
		// throttle the consumer for hours.
		if bound, ok := b.quotas.bound(b.view(), meta.QuotaConsumerByteRate, req); ok {
			window := int32(max(min(bound*(quotaSamples-1)*quotaSampleMillis/1000, math.MaxInt32), 1))
			if r.MaxBytes <= 0 || r.MaxBytes > window {
				r.MaxBytes = window
			}
			r.MinBytes = min(r.MinBytes, window)
		}
	}
	// sent counts the records of the response that is sent (metrics,
	// the consumer's quota).
	sent := func(resp *protocol.RawResponse, perTopic []int64) *protocol.RawResponse {
		b.observeFetched(r, perTopic)
		if consumer {
			var n int64
			for _, v := range perTopic {
				n += v
			}
			b.quotas.record(b.view(), meta.QuotaConsumerByteRate, req, n, time.Now())
		}
		return resp
	}
	resp, n, done, parts, perTopic := b.fetchOnce(r, fa)
	// MinBytes beyond what the fetch may return could never be met: the
	// fetch returns once it has all it may return.
	minBytes := min(int(r.MinBytes), b.fetchMaxBytes(r))
	if done || n >= minBytes || r.MaxWaitMillis <= 0 || len(parts) == 0 {
		return reply(sent(resp, perTopic))
	}
	// A parked fetch holds no records: what was found is dropped and
	// the partitions are read again when the wait ends (as Kafka's fetch
	// purgatory, which holds only the request, reads the log when it
	// completes). MaxWaitMillis is not clamped (Kafka does not), since a
	// parked fetch costs only its request frame.
	resp = nil
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	return protocol.Response{Mute: true, Later: func() kmsg.Response {
		b.parkedFetches.Add(1)
		defer b.parkedFetches.Add(-1)
		if h := testHookFetchParking.Load(); h != nil {
			(*h)()
		}
		w := replica.NewWaiter()
		for _, p := range parts {
			p.AddWaiter(w)
		}
		defer func() {
			for _, p := range parts {
				p.RemoveWaiter(w)
			}
		}()
		// An append between the first read and the waiter's registration
		// woke nobody (a Later runs after the responses before it on its
		// connection, so that gap can be long): read again now that any
		// later one wakes w. Missing it cost a follower a whole
		// replica.fetch.wait.max.ms, and acks=all produces with it.
		if ctx.Err() != nil {
			return r.ResponseKind() // not written: the connection is closing
		}
		if resp, n, done, _, perTopic := b.fetchOnce(r, fa); done || n >= minBytes {
			return sent(resp, perTopic)
		}
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				// Not written: the connection is closing.
				return r.ResponseKind()
			case <-timer.C:
				resp, _, _, _, perTopic := b.fetchOnce(r, fa)
				return sent(resp, perTopic)
			case <-w.C:
				if resp, n, done, _, perTopic := b.fetchOnce(r, fa); done || n >= minBytes {
					return sent(resp, perTopic)
				}
			}
		}
	}}
}

// testHookFetchParking, if set, runs when a parked fetch's wait begins,
// before its waiter is registered (tests force interleavings with it).
var testHookFetchParking atomic.Pointer[func()]

// ParkedFetches is the number of fetches waiting for MinBytes (Kafka's
// fetch purgatory size).
func (b *Broker) ParkedFetches() int64 { return b.parkedFetches.Load() }

// fetchOnce reads every requested partition once. It returns the response,
// the record bytes in it, whether it must be sent now (a partition has an
// error), the partitions read (to wait on), and the record bytes of each
// requested topic. The response's records are
// ranges of the segment files (klog.Records), sent from there by the
// connection's writer (sendfile) and never held in memory: unlike other
// responses, a fetch takes nothing from the memory budget for them.
func (b *Broker) fetchOnce(r *kmsg.FetchRequest, fa fetchAuthz) (*protocol.RawResponse, int, bool, []*localPartition, []int64) {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	recs := make(fetchRecords, len(r.Topics))
	perTopic := make([]int64, len(r.Topics))
	total := 0
	maxBytes := b.fetchMaxBytes(r)
	hasError := false
	var parts []*localPartition
	s := b.view()
	followerMayJoin := r.ReplicaID >= 0 && mayJoinISR(s, r.ReplicaID)
	for ti, t := range r.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		recs[ti] = make([]klog.Records, len(t.Partitions))
		allowed := fa.allowed(r, t.Topic)
		for i, p := range t.Partitions {
			rp := &rt.Partitions[i]
			*rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			if !allowed {
				// Not hasError: the fetch may still wait for the others.
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			lp, code := b.localLeader(s, t.Topic, p.Partition)
			if code == 0 {
				code = errorCode(lp.CheckLeaderEpoch(p.CurrentLeaderEpoch))
			}
			if code == 0 && r.ReplicaID < 0 && !lp.HighWatermarkKnown() {
				// A new leader's high watermark may lag its
				// predecessor's until its followers reach the start of
				// its epoch: answering consumers now could show them
				// the high watermark going back. REPLICA_NOT_AVAILABLE
				// is retriable in every client (they back off and fetch
				// again), as OFFSET_NOT_AVAILABLE is for ListOffsets
				// (KIP-207).
				code = kerr.ReplicaNotAvailable.Code
			}
			if code == 0 {
				parts = append(parts, lp)
				l := lp.Log()
				rp.HighWatermark, rp.LastStableOffset = lp.Watermarks()
				rp.LogStartOffset = l.StartOffset()
				if p.LastFetchedEpoch >= 0 {
					epoch, end := l.EndOffsetForEpoch(p.LastFetchedEpoch)
					if epoch < 0 || end < 0 {
						// No epoch in common to truncate at: as Kafka,
						// OFFSET_OUT_OF_RANGE (never a DivergingEpoch of
						// -1, -1, which reads as no divergence).
						rp.ErrorCode = kerr.OffsetOutOfRange.Code
						hasError = true
						continue
					}
					if end < p.FetchOffset || epoch < p.LastFetchedEpoch {
						rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = epoch, end
						hasError = true // answer now: the fetcher must truncate
						continue
					}
				}
				if r.ReplicaID >= 0 {
					expand, err := lp.FollowerFetch(r.ReplicaID, p.CurrentLeaderEpoch, p.FetchOffset, time.Now(), followerMayJoin)
					if err != nil {
						rp.ErrorCode = errorCode(err)
						hasError = true
						continue
					}
					if expand {
						b.isr.propose(lp)
					}
					lp.FollowerLogStart(r.ReplicaID, p.CurrentLeaderEpoch, p.LogStartOffset)
					// The follower's fetch may have moved the high watermark.
					rp.HighWatermark, rp.LastStableOffset = lp.Watermarks()
				}
				// The first batch is read whatever the limit (KIP-74),
				// even a PartitionMaxBytes of 0.
				limit := max(min(int(p.PartitionMaxBytes), maxBytes-total), 0)
				if limit > 0 || total == 0 {
					read := lp.Read
					switch {
					case r.ReplicaID >= 0:
						read = func(offset int64, maxBytes int, _ bool) (klog.Records, error) {
							return lp.ReadForFollower(offset, maxBytes)
						}
					case r.IsolationLevel == 1:
						// read_committed: up to the last stable offset,
						// with the aborted transactions that overlap the
						// batches returned (as Kafka, bounded by their end,
						// so that the list does not grow with what lies
						// beyond).
						read = func(offset int64, maxBytes int, minOne bool) (klog.Records, error) {
							data, hw, lso, err := lp.ReadCommitted(offset, maxBytes, minOne)
							if err == nil {
								rp.HighWatermark, rp.LastStableOffset = hw, lso
								if data.Len() > 0 {
									rp.AbortedTransactions = abortedTransactions(l.AbortedTxns(offset, data.NextOffset()))
								}
							}
							return data, err
						}
					}
					data, err := read(p.FetchOffset, limit, total == 0)
					if err != nil {
						code = errorCode(err)
					} else if r.Version < 10 && data.Compressed(compressionZstd) {
						// Consumers learn zstd with Fetch v10 (KIP-110).
						code = kerr.UnsupportedCompressionType.Code
					} else {
						recs[ti][i] = data
						total += int(data.Len())
						perTopic[ti] += data.Len()
					}
				}
			}
			if code != 0 {
				rp.ErrorCode = code
				hasError = true
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return rawFetchResponse(resp, recs), total, hasError, parts, perTopic
}

// abortedTransactions converts the log's aborted transactions for a Fetch
// response: nil (not an empty array) when there are none, as Kafka.
func abortedTransactions(txns []klog.AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	if len(txns) == 0 {
		return nil
	}
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(txns))
	for i, a := range txns {
		out[i] = kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		out[i].ProducerID, out[i].FirstOffset = a.ProducerID, a.FirstOffset
	}
	return out
}

// fetchMaxBytes returns the most record bytes a fetch may return: its
// MaxBytes (absent before v3), capped at fetch.max.bytes for a consumer
// and replica.fetch.response.max.bytes for a follower.
func (b *Broker) fetchMaxBytes(r *kmsg.FetchRequest) int {
	limit := int(b.cfg.FetchMaxBytes)
	if r.ReplicaID >= 0 {
		limit = int(b.cfg.ReplicaFetchResponseMaxBytes)
	}
	if limit <= 0 {
		limit = 1 << 30
	}
	if r.Version >= 3 && r.MaxBytes > 0 {
		limit = min(limit, int(r.MaxBytes))
	}
	return limit
}
