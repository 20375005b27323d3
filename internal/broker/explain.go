package broker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/replica"
)

// PartitionExplain is a leader's account of one partition it leads and of
// each of its replicas: what `samsa topic describe --explain` and the
// metrics listener's /v1/partitions show (docs/metrics.md, "Explained ISR
// health").
type PartitionExplain struct {
	Topic         string        `json:"topic"`
	Partition     int32         `json:"partition"`
	Leader        int32         `json:"leader"`
	LeaderEpoch   int32         `json:"leader_epoch"`
	ISR           []int32       `json:"isr"`
	MinISR        int32         `json:"min_insync_replicas"`
	HighWatermark int64         `json:"high_watermark"`
	Replicas      []ReplicaView `json:"replicas"`
	// History is the partition's ISR history from etcd, oldest change
	// first (coord.ISRHistoryLen at most); HistoryError says why it is
	// missing when it could not be read.
	History      []meta.ISRChange `json:"history,omitempty"`
	HistoryError string           `json:"history_error,omitempty"`
}

// ReplicaView is one replica as its leader sees it.
type ReplicaView struct {
	ID     int32 `json:"id"`
	Leader bool  `json:"leader"`
	InISR  bool  `json:"in_isr"`
	// LogEnd is the replica's durable log end: the leader's own, or the
	// follower's last fetch offset (-1 before its first fetch in this
	// leader epoch); LagRecords the leader's log end minus it.
	LogEnd     int64 `json:"log_end"`
	LagRecords int64 `json:"lag_records"`
	// Durable: the replica has fsync'd everything up to the high
	// watermark (followers fetch from their durable end).
	DurableToHighWatermark bool `json:"durable_to_high_watermark"`
	// LastFetchAgoMs and CaughtUpAgoMs are how long ago the follower last
	// fetched and last had all the leader had; -1 if never in this epoch.
	LastFetchAgoMs int64 `json:"last_fetch_ago_ms"`
	CaughtUpAgoMs  int64 `json:"caught_up_ago_ms"`
	// Reason says why a replica is not in the ISR (empty when it is).
	Reason string `json:"reason,omitempty"`
}

// historyTimeout bounds the etcd reads of an explanation's ISR history.
const historyTimeout = 2 * time.Second

// Explain returns the partitions led here (of topics only, if any are
// given), with their replicas, sorted by topic and partition: this
// broker's own state, no request is made.
func (b *Broker) Explain(topics ...string) []PartitionExplain {
	st := b.Status()
	s := b.view()
	now := time.Now()
	var out []PartitionExplain
	for i := range st.Partitions {
		p := &st.Partitions[i]
		if !p.Leading() || len(topics) > 0 && !slices.Contains(topics, p.Topic) {
			continue
		}
		lp := b.partitions.get(p.Topic, p.Partition)
		durable := p.LogEnd
		if lp != nil && lp.Log().SyncOnAppend() {
			durable = lp.Log().FlushedOffset()
		}
		e := PartitionExplain{Topic: p.Topic, Partition: p.Partition, Leader: b.cfg.NodeID, LeaderEpoch: p.LeaderEpoch,
			ISR: p.ISR, MinISR: p.MinInsyncReplicas, HighWatermark: p.HighWatermark}
		for _, id := range p.Replicas {
			v := ReplicaView{ID: id, InISR: slices.Contains(p.ISR, id), LastFetchAgoMs: -1, CaughtUpAgoMs: -1}
			if id == b.cfg.NodeID {
				v.Leader, v.LogEnd = true, durable
				v.DurableToHighWatermark = durable >= p.HighWatermark
				e.Replicas = append(e.Replicas, v)
				continue
			}
			var f *replica.FollowerStatus
			for j := range p.Followers {
				if p.Followers[j].ID == id {
					f = &p.Followers[j]
				}
			}
			if f != nil {
				v.LogEnd = f.LogEnd
				if !f.LastFetch.IsZero() {
					v.LastFetchAgoMs = now.Sub(f.LastFetch).Milliseconds()
				}
				if !f.LastCaughtUp.IsZero() {
					v.CaughtUpAgoMs = now.Sub(f.LastCaughtUp).Milliseconds()
				}
			} else {
				v.LogEnd = -1
			}
			if v.LogEnd >= 0 {
				v.LagRecords = max(p.LogEnd-v.LogEnd, 0)
				v.DurableToHighWatermark = v.LogEnd >= p.HighWatermark
			}
			if !v.InISR {
				v.Reason = b.outOfISRReason(s, id, v, p.HighWatermark)
			}
			e.Replicas = append(e.Replicas, v)
		}
		out = append(out, e)
	}
	return out
}

// ExplainWithHistory is Explain with each partition's ISR history read
// from etcd (one serializable read per topic, bounded by historyTimeout).
func (b *Broker) ExplainWithHistory(ctx context.Context, topics ...string) []PartitionExplain {
	parts := b.Explain(topics...)
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	s := b.view()
	type result struct {
		history map[int32][]meta.ISRChange
		err     error
	}
	read := map[string]result{}
	for i := range parts {
		e := &parts[i]
		r, ok := read[e.Topic]
		if !ok {
			if vt, known := s.Topics[e.Topic]; known {
				r.history, r.err = b.ISRHistory(ctx, vt.Topic.ID)
			} else {
				r.err = fmt.Errorf("topic %q is not in this broker's metadata", e.Topic)
			}
			read[e.Topic] = r
		}
		if r.err != nil {
			e.HistoryError = r.err.Error()
			continue
		}
		e.History = r.history[e.Partition]
	}
	return parts
}

// ISRChange is one change of a partition's ISR history, as etcd keeps it
// (for readers that do not import internal/meta: the console).
type ISRChange = meta.ISRChange

// ISRHistory returns the ISR history of the topic with id id, by
// partition, oldest change first (coord.Client.ISRHistory).
func (b *Broker) ISRHistory(ctx context.Context, id meta.TopicID) (map[int32][]meta.ISRChange, error) {
	return b.client.ISRHistory(ctx, id)
}

// outOfISRReason says why follower id, seen as v, is not in the ISR, from
// what the leader knows now: its broker's registration, then its fetches.
func (b *Broker) outOfISRReason(s *coord.Snapshot, id int32, v ReplicaView, hw int64) string {
	vb, registered := s.Brokers[id]
	ago := func(ms int64) string {
		if ms < 0 {
			return "never in this leader epoch"
		}
		return (time.Duration(ms) * time.Millisecond).Round(100*time.Millisecond).String() + " ago"
	}
	switch {
	case !registered:
		return "broker not registered: down, or its etcd session was lost"
	case vb.ShuttingDown:
		return "broker in controlled shutdown"
	case vb.Recovering:
		return "broker recovering from an unclean shutdown: it may not rejoin until its registration is cleared (docs/replication.md)"
	case v.LogEnd < 0:
		return "has not fetched in this leader epoch yet"
	case v.LogEnd < hw:
		return fmt.Sprintf("catching up: %d records behind the high watermark, last caught up %s (replica.lag.time.max.ms %d)",
			hw-v.LogEnd, ago(v.CaughtUpAgoMs), b.cfg.ReplicaLagTimeMax.Milliseconds())
	}
	return "caught up with the high watermark: joining the ISR once it reaches the start of the leader epoch"
}

// ReplicaState is one replica hosted here, as it knows itself: what an
// unclean-election dry run compares (`samsa cluster elect-leaders
// --election-type unclean --dry-run`, the metrics listener's
// /v1/replicas), and its truncation audit (`--explain`, the console).
type ReplicaState struct {
	Topic         string      `json:"topic"`
	Partition     int32       `json:"partition"`
	Role          string      `json:"role"`
	LeaderEpoch   int32       `json:"leader_epoch"`
	LogStart      int64       `json:"log_start"`
	LogEnd        int64       `json:"log_end"`
	HighWatermark int64       `json:"high_watermark"`
	Truncations   Truncations `json:"truncations"`
}

// Replicas returns every replica hosted here (of topics only, if any are
// given), sorted by topic and partition.
func (b *Broker) Replicas(topics ...string) []ReplicaState {
	st := b.Status()
	out := make([]ReplicaState, 0, len(st.Partitions))
	for _, p := range st.Partitions {
		if len(topics) > 0 && !slices.Contains(topics, p.Topic) {
			continue
		}
		out = append(out, ReplicaState{Topic: p.Topic, Partition: p.Partition, Role: p.Role.String(), LeaderEpoch: p.LeaderEpoch,
			LogStart: p.LogStart, LogEnd: p.LogEnd, HighWatermark: p.HighWatermark, Truncations: p.Truncations})
	}
	return out
}
