package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

// Transactional offset commits (KIP-98, KIP-447): TxnOffsetCommit writes
// the offsets in the producer's transaction, as a transactional batch of
// the group's __consumer_offsets partition; they stay pending, invisible
// to OffsetFetch (and answered UNSTABLE_OFFSET_COMMIT to a RequireStable
// one), until the transaction's marker is written to that partition
// (CompleteTxn): committed, they become the group's offsets; aborted,
// they go. A load replays the same from the partition's transactional
// batches and markers.

// StartTxnCommitOffsets handles a TxnOffsetCommit request whose
// transaction was verified under token (the partition's log verification
// token, 0 when the transaction was already open there: see
// Store.AppendTxn). Its group checks are
// Kafka's: a request without generation for a group that does not exist
// or is empty is accepted (creating the group), one with a generation or
// member must name a current member and generation; unlike OffsetCommit,
// a rebalance in progress does not refuse it.
func (c *Coordinator) StartTxnCommitOffsets(req *kmsg.TxnOffsetCommitRequest, token uint64) func(context.Context) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	setAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		resp.Topics = resp.Topics[:0]
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				if code == 0 {
					rp.ErrorCode = c.commitCode(t.Topic, p.Metadata)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(req.Group, false)
	if code != 0 {
		return answered(setAll(code))
	}
	g := sh.groups[req.Group]
	withMember := req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil
	switch {
	case g == nil && req.Generation >= 0:
		return answered(setAll(kerr.IllegalGeneration.Code))
	case g == nil, req.Generation < 0 && g.state == stateEmpty:
	case withMember:
		if _, mcode := memberLocked(g, req.MemberID, req.InstanceID, req.Generation); mcode != 0 {
			return answered(setAll(mcode))
		}
	}
	now := c.cfg.Now()
	ts := now.UnixMilli()
	type commit struct {
		tp topicPartition
		o  Offset
	}
	var commits []commit
	size := batchOverhead
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if c.commitCode(t.Topic, p.Metadata) != 0 {
				continue
			}
			meta := ""
			if p.Metadata != nil {
				meta = *p.Metadata
			}
			o := Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: meta, CommitTimestamp: ts}
			if req.Version < 2 {
				o.LeaderEpoch = -1
			}
			commits = append(commits, commit{topicPartition{t.Topic, p.Partition}, o})
			size += offsetRecordSize(req.Group, t.Topic, meta)
		}
	}
	if len(commits) == 0 {
		return answered(setAll(0))
	}
	if size > sh.store.MaxBatchBytes() {
		return answered(setAll(kerr.InvalidCommitOffsetSize.Code))
	}
	recs := make([]records.KV, len(commits))
	for i, cm := range commits {
		recs[i] = records.KV{Key: offsetKey(req.Group, cm.tp.topic, cm.tp.partition), Value: offsetValue(cm.o)}
	}
	end, err := sh.store.AppendTxn(sh.epoch, req.ProducerID, req.ProducerEpoch, token, recs)
	if err != nil {
		code := c.writeCode(sh, err)
		switch {
		case code == kerr.RequestTimedOut.Code:
			code = kerr.CoordinatorNotAvailable.Code
		case code == kerr.InvalidTxnState.Code && req.Version >= 4:
			// The transaction ended after the broker verified it: the
			// client can abort and go on (KIP-890), as when the
			// verification itself finds the partition outside it.
			code = kerr.TransactionAbortable.Code
		}
		return answered(setAll(code))
	}
	if g == nil {
		g = newGroup(req.Group, now)
		sh.groups[req.Group] = g
	}
	for _, cm := range commits {
		cm.o.end = end
		g.addPendingTxn(req.ProducerID, cm.tp, cm.o)
	}
	sh.ends[req.Group] = end
	w := c.awaitLocked(sh, []change{{group: req.Group}}, end, nil)
	return func(ctx context.Context) *kmsg.TxnOffsetCommitResponse {
		code := await(ctx, w)
		if code == kerr.RequestTimedOut.Code {
			code = kerr.CoordinatorNotAvailable.Code
		}
		return setAll(code)
	}
}

// CompleteTxn applies the marker of producer pid's transaction written at
// markerOffset to __consumer_offsets partition, which this broker leads in
// epoch: the transaction's pending offsets in every group of the partition
// take effect (commit) or go (abort).
func (c *Coordinator) CompleteTxn(partition, epoch int32, pid int64, commit bool, markerOffset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, ok := c.shards[partition]
	if !ok || sh.epoch != epoch {
		return // a load (now or by the next leader) replays the marker
	}
	if sh.loading {
		// The load may have started before the marker was written: it
		// applies the marker once done, unless it read it.
		sh.lateMarkers = append(sh.lateMarkers, lateMarker{pid, commit, markerOffset})
		return
	}
	c.completeTxnLocked(sh, pid, commit, markerOffset)
}

// lateMarker is a marker written while its shard was loading.
type lateMarker struct {
	pid    int64
	commit bool
	offset int64
}

func (c *Coordinator) completeTxnLocked(sh *shard, pid int64, commit bool, markerOffset int64) {
	for _, g := range sh.groups {
		if _, ok := g.pendingTxn[pid]; ok {
			g.completeTxn(pid, commit, markerOffset)
		}
	}
}
