package broker

// Produce (key 0), versions 3–9 (flexible from v9).
//
// Per partition: the batches are validated once (records.Validate: CRC,
// lengths, counts, timestamps, decompression capped), appended as they came
// with offsets and the leader epoch patched in, and acknowledged:
//   - acks=0: no response; the connection is closed if any partition failed,
//     as Kafka does, since the client cannot otherwise learn of the error.
//   - acks=1: once the leader's log has the batch durably (fsync'd with group
//     commit when flush.messages=1; at once in page-cache mode).
//   - acks=-1: once the high watermark passes the batch, every ISR member
//     having it durably. Refused up front with NOT_ENOUGH_REPLICAS while the
//     ISR is smaller than min.insync.replicas; NOT_ENOUGH_REPLICAS_AFTER_APPEND
//     if it shrinks below that before the batch is committed.
// The wait is bounded by the request's TimeoutMillis (REQUEST_TIMED_OUT).
// A duplicate from an idempotent producer is answered with the offsets the
// original batch got. Each partition fails or succeeds on its own. With
// an authorizer, a topic the principal may not WRITE gets
// TOPIC_AUTHORIZATION_FAILED on each partition, whether or not it exists.
//
// Transactional batches need the request's transactional id, with WRITE on
// it (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition). A
// partition where the producer's transaction is not open yet is first
// verified with the id's coordinator (KIP-890; verifyProduce): a partition
// not added to the transaction gets INVALID_TXN_STATE, a coordinator that
// cannot answer NOT_ENOUGH_REPLICAS (retried), a fenced producer
// INVALID_PRODUCER_EPOCH; and the batch is appended only if no marker of
// the producer came in between.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/txn"
)

// compressionZstd is the codec number of zstd in batch attributes.
const compressionZstd = 4

// appended is one partition's append awaiting its acknowledgement.
type appended struct {
	part  *localPartition
	resp  *kmsg.ProduceResponseTopicPartition
	epoch int32 // the leader epoch it was appended in
	end   int64 // offset after the appended batches
}

func (b *Broker) handleProduce(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)

	reqErr := int16(0)
	switch {
	case r.Acks != 0 && r.Acks != 1 && r.Acks != -1:
		reqErr = kerr.InvalidRequiredAcks.Code
	}
	s := b.view()
	az := b.authz(req)
	var verified map[txn.TopicPartition]produceVerification
	if reqErr == 0 {
		verified, reqErr = b.verifyProduce(ctx, s, az, r)
	}

	// The partitions' checks come first, in the request's order; then
	// their appends, on more than one core when the request is large
	// (appendAll); then their outcomes, in order again.
	var jobs []produceJob
	failed := false
	for _, t := range r.Topics {
		writable := az.topic(kmsg.ACLOperationWrite, t.Topic)
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for i, p := range t.Partitions {
			rp := &rt.Partitions[i]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			code := reqErr
			var lp *localPartition
			if code == 0 && !writable {
				code = kerr.TopicAuthorizationFailed.Code
			}
			if code == 0 {
				code = errorCode(guardInternalTopic(t.Topic, "produce to"))
			}
			if code == 0 {
				lp, code = b.localLeader(s, t.Topic, p.Partition)
			}
			if code == 0 && r.Acks == -1 {
				code = errorCode(lp.CheckMinISR())
			}
			v := verified[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
			if code == 0 {
				code = v.code
			}
			if code == 0 {
				jobs = append(jobs, produceJob{lp: lp, topic: t.Topic, records: p.Records, resp: rp, verification: v})
			} else {
				rp.ErrorCode = code
				failed = true
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	b.appendAll(jobs, r.Version)
	var pending []appended
	for i := range jobs {
		j := &jobs[i]
		rp := j.resp
		if j.err != nil {
			if code := errorCode(j.err); code != 0 {
				rp.ErrorCode = code
				failed = true
			}
			if rp.ErrorCode == kerr.UnknownServerError.Code {
				b.logger.Error("produce failed", "topic", j.topic, "partition", rp.Partition, "err", j.err)
			}
			continue
		}
		rp.BaseOffset, rp.LogStartOffset, rp.LogAppendTime = j.info.FirstOffset, j.info.LogStartOffset, j.appendTime
		pending = append(pending, appended{j.lp, rp, j.info.LeaderEpoch, j.info.LastOffset + 1})
		if !j.dup {
			b.observer().RecordsIn(j.topic, int64(len(j.records)), j.info.LastOffset-j.info.FirstOffset+1)
		}
	}

	// The produce quota counts the request's records (docs/quotas.md).
	var produced int64
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			produced += int64(len(p.Records))
		}
	}
	throttle := b.quotas.record(s, meta.QuotaProducerByteRate, req, produced, time.Now())
	resp.ThrottleMillis = int32(throttle.Milliseconds())

	if r.Acks == 0 {
		// Nothing to wait for, but the appended data must still become
		// durable and visible to consumers.
		return protocol.Response{NoResponse: true, Close: failed, Throttle: throttle, Later: func() kmsg.Response {
			inParallel(len(pending), maxParallelSyncs, func(i int) {
				a := pending[i]
				if err := a.part.Flush(); err != nil && !errors.Is(err, klog.ErrClosed) {
					b.logger.Error("flush after acks=0 produce failed", "topic", a.part.Topic, "partition", a.part.Index, "err", err)
				}
			})
			return nil
		}}
	}
	if len(pending) == 0 {
		return protocol.Response{Body: resp, Throttle: throttle}
	}
	return protocol.Response{Throttle: throttle, Later: func() kmsg.Response {
		b.waitingProduces.Add(1)
		defer b.waitingProduces.Add(-1)
		wctx, cancel := context.WithTimeout(ctx, time.Duration(max(r.TimeoutMillis, 0))*time.Millisecond)
		defer cancel()
		// Sync the partitions' logs together first: one after another,
		// each fsync would wait for the device on its own. A failed sync
		// fails its log for good, and the wait below reports it.
		var syncs []int
		for i, a := range pending {
			if a.part.Log().SyncOnAppend() {
				syncs = append(syncs, i)
			}
		}
		if len(syncs) > 1 {
			inParallel(len(syncs), maxParallelSyncs, func(j int) { a := pending[syncs[j]]; a.part.Sync(a.end) })
		}
		for _, a := range pending {
			var err error
			if r.Acks == -1 {
				err = a.part.WaitCommitted(wctx, a.epoch, a.end)
			} else {
				err = a.part.WaitLocal(a.epoch, a.end)
			}
			if err == nil && !b.sessionLive() {
				// Past its session's deadline, a peer may have fenced
				// this broker and the controller elected other leaders:
				// acknowledge nothing (coord's "Liveness").
				err = replica.ErrNotLeader
			}
			if err != nil {
				a.resp.ErrorCode = errorCode(err)
				if errors.Is(err, context.Canceled) {
					a.resp.ErrorCode = kerr.RequestTimedOut.Code
				}
				a.resp.BaseOffset = -1
			}
		}
		return resp
	}}
}

// produceJob is one partition's append of a Produce request, and its
// outcome.
type produceJob struct {
	lp           *localPartition
	topic        string
	records      []byte
	resp         *kmsg.ProduceResponseTopicPartition
	verification produceVerification

	info       replica.Appended
	appendTime int64
	dup        bool
	err        error
}

// parallelAppendBytes is the size of a Produce request's records from
// which its partitions are appended on more than one goroutine. Below it
// the hand-offs would cost more than they save.
const parallelAppendBytes = 1 << 20

// appendAll appends the jobs' records, by appendWorkers goroutines.
func (b *Broker) appendAll(jobs []produceJob, version int16) {
	inParallel(len(jobs), appendWorkers(jobs), func(i int) {
		j := &jobs[i]
		j.info, j.appendTime, j.dup, j.err = b.appendProduced(j.lp, j.records, version, j.verification)
	})
}

// appendWorkers is how many goroutines append a request's partitions. A
// request's partitions are independent logs, so a large request's are
// appended by up to GOMAXPROCS goroutines (issue 11: the append, a copy
// into the page cache, is most of a Produce's handling, which its
// connection waits for before it reads the next request). A request that
// names a partition twice is appended by one, so that the partition's two
// entries go in the request's order, as they would alone (an idempotent
// producer's later sequence first would be refused as out of order).
func appendWorkers(jobs []produceJob) int {
	size := 0
	for i := range jobs {
		size += len(jobs[i].records)
	}
	if len(jobs) < 2 || size < parallelAppendBytes {
		return 1
	}
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	if workers <= 1 {
		return 1
	}
	seen := make(map[*localPartition]struct{}, len(jobs))
	for i := range jobs {
		if _, ok := seen[jobs[i].lp]; ok {
			return 1
		}
		seen[jobs[i].lp] = struct{}{}
	}
	return workers
}

// appendProduced validates and appends one partition's records;
// transactional ones verified as verifyProduce found. For a LogAppendTime
// topic the batch is stamped with the append time, which appendTime is
// (-1 for CreateTime). dup: they were appended before (an idempotent
// producer's retry), and info is that append's.
func (b *Broker) appendProduced(lp *localPartition, recs []byte, version int16, v produceVerification) (info replica.Appended, appendTime int64, dup bool, err error) {
	st := lp.settings.Load()
	res, err := records.Validate(recs, records.Limits{
		MaxMessageBytes:        st.maxMessageBytes,
		MaxDecompressedBytes:   records.DefaultMaxDecompressedBytes,
		MaxSegmentBytes:        int32(min(st.segmentBytes, 1<<31-1)),
		MaxTimestampDiffBefore: st.timestampBeforeMs,
		MaxTimestampDiffAfter:  st.timestampAfterMs,
		TimestampType:          st.timestampType,
		Compacted:              st.compact,
		Memory:                 b.server.Budget(),
	})
	if err != nil {
		return replica.Appended{}, -1, false, err
	}
	if res.Compression == compressionZstd && version < 7 {
		// Kafka accepts zstd only from Produce v7 (KIP-110).
		return replica.Appended{}, -1, false, fmt.Errorf("%w: zstd needs Produce v7+", records.ErrUnsupportedCompression)
	}
	appendTime = -1
	if res.LogAppendTime {
		// The request's bytes are the broker's to change (the frame
		// buffer, reused only once the handler returned).
		klog.SetLogAppendTime(recs, res.Now)
		appendTime = res.Now
	}
	appendFn := lp.AppendAsLeader
	if !v.unverified {
		appendFn = func(b []byte) (replica.Appended, error) { return lp.AppendTxnAsLeader(b, v.token) }
	}
	info, err = appendFn(recs)
	if errors.Is(err, klog.ErrDuplicateSequence) {
		// Already appended: answer with the original offsets.
		return info, appendTime, true, nil
	}
	return info, appendTime, false, err
}
