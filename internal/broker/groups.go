package broker

// The group coordinator's side of the broker: __consumer_offsets
// partitions led here are handed to the coordinator (internal/group) with
// a Store over the local replica, and its timers are ticked.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/group"
	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
)

// groupTickInterval is how often the coordinator's timers run: the
// precision of session and rebalance timeouts.
const groupTickInterval = 100 * time.Millisecond

// offsetsTopicSegmentBytes is __consumer_offsets' segment.bytes
// (offsets.topic.segment.bytes).
const offsetsTopicSegmentBytes = 100 << 20

// offsetsStore is a __consumer_offsets partition led here.
type offsetsStore struct {
	lp *localPartition
	// live, if set, reports whether the broker's session is live
	// (coord.Session.Live): past its deadline nothing is acknowledged.
	live func() bool
}

var _ group.Store = offsetsStore{}

// Append appends recs as leader, only while the replica leads in epoch
// (the coordinator's), without waiting. The coordinator calls it under its
// lock: it takes the replica's lock only for the in-memory append.
func (s offsetsStore) Append(epoch int32, recs []records.KV) (int64, error) {
	if err := s.lp.CheckMinISR(); err != nil {
		return 0, err
	}
	info, err := s.lp.AppendInEpoch(epoch, records.Build(recs, time.Now().UnixMilli()))
	if err != nil {
		return 0, notLeader(err)
	}
	return info.LastOffset + 1, nil
}

// AppendTxn appends recs as one transactional batch of producer pid at
// producerEpoch (a TxnOffsetCommit), like Append, verified under token
// (klog.Log.AppendVerified).
func (s offsetsStore) AppendTxn(epoch int32, pid int64, producerEpoch int16, token uint64, recs []records.KV) (int64, error) {
	if err := s.lp.CheckMinISR(); err != nil {
		return 0, err
	}
	info, err := s.lp.AppendTxnInEpoch(epoch, records.BuildTxn(recs, time.Now().UnixMilli(), pid, producerEpoch), token)
	switch {
	case errors.Is(err, klog.ErrInvalidTxnState):
		return 0, fmt.Errorf("%w: %v", group.ErrTxnState, err)
	case errors.Is(err, klog.ErrInvalidProducerEpoch):
		return 0, fmt.Errorf("%w: %v", group.ErrProducerFenced, err)
	case err != nil:
		return 0, notLeader(err)
	}
	return info.LastOffset + 1, nil
}

// WaitCommitted waits until offsets below end are committed, by this
// replica as leader in epoch throughout.
func (s offsetsStore) WaitCommitted(ctx context.Context, epoch int32, end int64) error {
	err := s.lp.WaitCommitted(ctx, epoch, end)
	if err == nil && s.live != nil && !s.live() {
		err = replica.ErrNotLeader // a peer may have fenced this broker
	}
	return notLeader(err)
}

// notLeader wraps the replica's errors for a partition no longer led here
// as group.ErrNotLeader.
func notLeader(err error) error {
	if errors.Is(err, replica.ErrNotLeader) || errors.Is(err, replica.ErrClosed) {
		return fmt.Errorf("%w: %v", group.ErrNotLeader, err)
	}
	return err
}

// MaxBatchBytes is the partition's max.message.bytes.
func (s offsetsStore) MaxBatchBytes() int {
	if st := s.lp.settings.Load(); st != nil && st.maxMessageBytes > 0 {
		return int(st.maxMessageBytes)
	}
	return defaultMaxMessageBytes
}

// defaultMaxMessageBytes is Kafka's message.max.bytes default.
const defaultMaxMessageBytes = 1048588

// loadChunk is how much of the log Load reads at a time.
const loadChunk = 1 << 20

// Load replays the partition from its start to its current end, which it
// returns; each record's end is its batch's (a batch is committed whole).
// Records of transactional batches carry their producer, markers are
// replayed as such.
func (s offsetsStore) Load(ctx context.Context, fn func(r group.Record) error) (int64, error) {
	l := s.lp.Log()
	end := l.EndOffset()
	for off := l.StartOffset(); off < end; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		data, err := l.Read(off, end, loadChunk, true)
		if err != nil {
			return 0, err
		}
		if len(data) == 0 {
			return 0, fmt.Errorf("broker: read %s at %d returned nothing before %d", group.OffsetsTopic, off, end)
		}
		for len(data) >= klog.BatchHeaderSize {
			h, err := klog.ParseBatchHeader(data)
			if err != nil {
				return 0, err
			}
			batch := data[:h.Size()]
			data = data[h.Size():]
			next := h.BaseOffset + int64(h.LastOffsetDelta) + 1
			if next <= off {
				continue
			}
			off = next
			if h.IsControl() {
				if m, ok := klog.ParseMarker(&h, batch); ok {
					if err := fn(group.Record{End: next, ProducerID: m.ProducerID, Marker: true, Commit: m.Commit}); err != nil {
						return 0, err
					}
				}
				continue
			}
			pid := int64(-1)
			if h.IsTransactional() {
				pid = h.ProducerID
			}
			var ferr error
			err = records.ForEachRecord(batch, &h, 0, func(r records.Record) bool {
				ferr = fn(group.Record{Key: r.Key, Value: r.Value, End: next, ProducerID: pid})
				return ferr == nil
			})
			if err == nil {
				err = ferr
			}
			if err != nil {
				return 0, err
			}
		}
	}
	return end, nil
}

// groupRoleChanged tells the coordinator about this broker's role for a
// __consumer_offsets partition.
func (b *Broker) groupRoleChanged(s *coord.Snapshot, tp topicPartition, lp *localPartition, leader bool, epoch int32) {
	if tp.topic != group.OffsetsTopic {
		return
	}
	if !leader {
		b.groups.Resigned(tp.partition, epoch)
		return
	}
	n := b.cfg.Groups.Partitions
	if vt, ok := s.Topics[group.OffsetsTopic]; ok {
		n = int32(len(vt.Topic.Partitions))
	}
	b.groups.Elected(tp.partition, epoch, n, offsetsStore{lp: lp, live: b.sessionLive})
}

// runGroupTicks drives the coordinator's timers until ctx is done.
func (b *Broker) runGroupTicks(ctx context.Context) {
	t := time.NewTicker(groupTickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.groups.Tick()
		}
	}
}

// ensureOffsetsTopic creates __consumer_offsets if it does not exist:
// offsets.topic.num.partitions partitions, min(offsets.topic.replication.
// factor, live brokers) replicas, compacted. It returns the topic's
// partition count.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) (int32, error) {
	if vt, ok := b.cache.Snapshot().Topics[group.OffsetsTopic]; ok {
		return int32(len(vt.Topic.Partitions)), nil
	}
	rf := min(b.cfg.OffsetsTopicReplicationFactor, int16(len(placementBrokers(b.cache.Snapshot()))))
	if rf < 1 {
		return 0, errors.New("broker: no live broker to place " + group.OffsetsTopic)
	}
	err := b.createTopic(ctx, group.OffsetsTopic, b.cfg.Groups.Partitions, rf, nil, map[string]string{
		"cleanup.policy": "compact",
		"segment.bytes":  fmt.Sprint(offsetsTopicSegmentBytes),
	})
	if err == nil {
		err = b.waitApplied(ctx)
	}
	if err != nil && !errors.Is(err, coord.ErrTopicExists) {
		return 0, err
	}
	vt, ok := b.cache.Snapshot().Topics[group.OffsetsTopic]
	if !ok {
		return 0, errors.New("broker: " + group.OffsetsTopic + " not in metadata after creation")
	}
	return int32(len(vt.Topic.Partitions)), nil
}
