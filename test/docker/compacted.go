package docker

// A compacted topic in the campaign: keyed acks=all writes, a fault that
// stops one of its followers through compactions on the leader and starts
// it again (it must catch up through whatever the leader's compaction
// merged, and rejoin the ISR), and the checks of its outcome.

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/records"
	samsatest "github.com/samsa-io/samsa/test"
)

// CompactedTopicConfig is the campaign's compacted topic: replicated three
// times (min.insync.replicas 2), with segments small enough that they roll
// every second or two under the keyed workload, so that compaction (every
// log.cleaner.backoff.ms, see CampaignOverrides) runs all the time.
var CompactedTopicConfig = map[string]*string{
	"min.insync.replicas": strPtr("2"),
	"cleanup.policy":      strPtr("compact"),
	"segment.bytes":       strPtr("16384"),
}

func strPtr(s string) *string { return &s }

// keyedValue is the value of the keyed producer's n-th record: its key,
// "/", a unique suffix; keyOf recovers the key.
func keyedValue(key string, n int) string { return fmt.Sprintf("%s/c-%08d", key, n) }

func keyOf(v string) string {
	k, _, _ := strings.Cut(v, "/")
	return k
}

// compactions counts the "compacted" log lines about topic that broker n
// wrote since t (slog's text format: "... msg=compacted ... topic=T ...").
func (n *Node) compactions(topic string, since time.Time) int {
	out, err := docker("logs", "--since", since.UTC().Format(time.RFC3339Nano), n.Name)
	if err != nil {
		return 0
	}
	count := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " msg=compacted ") && strings.Contains(line, " topic="+topic+" ") {
			count++
		}
	}
	return count
}

// compactedFollower is FaultCompactedFollower: a follower of the
// compacted topic's partition 0 is stopped (kill -9, or frozen past its
// session timeout) until its leader has dropped it from the ISR and
// compacted at least twice since (so that the leader's compaction merges
// offsets at and above the follower's log end), then started again (or
// thawed: it exits, having lost its registration, and the supervisor
// starts it). The wait for full ISRs that follows includes the compacted
// topic: the follower must catch up through the leader's compacted log
// (issue 10, hole 3: a follower whose log end falls inside a compaction
// filler must not be stuck).
func (nm *Nemesis) compactedFollower() {
	kind := FaultCompactedFollower
	if nm.Compacted == "" {
		nm.h.Add("note", kind, 0, "no compacted topic, skipped")
		return
	}
	st, err := nm.partitionOf(nm.Compacted, 0, nil)
	if err != nil || st.Leader <= 0 {
		nm.h.Add("note", kind, 0, "leader of %s/0 unknown (%v), skipped", nm.Compacted, err)
		return
	}
	var followers []int32
	for _, r := range st.Replicas {
		if r != st.Leader {
			followers = append(followers, r)
		}
	}
	if len(followers) == 0 {
		nm.h.Add("note", kind, 0, "%s/0 has no follower (replicas %v), skipped", nm.Compacted, st.Replicas)
		return
	}
	victim := nm.c.Node(followers[nm.rnd.IntN(len(followers))])
	freeze := nm.rnd.IntN(2) == 0
	how := "kill -9"
	if freeze {
		how = "frozen (freezer cgroup)"
	}
	nm.h.Add("inject", kind, victim.ID, "follower of %s/0 (leader %d, epoch %d, ISR %v) %s until the leader has compacted twice without it",
		nm.Compacted, st.Leader, st.LeaderEpoch, st.ISR, how)
	start := time.Now()
	if freeze {
		victim.Pause()
	} else {
		victim.Kill()
	}
	// Wait until the follower is out of the ISR (its registration
	// expired) and the leader (whoever it is then) has compacted twice
	// since.
	const bound = 40 * time.Second
	var shrunk time.Time
	leader, done := int32(0), 0
	for time.Since(start) < bound {
		time.Sleep(500 * time.Millisecond)
		cur, err := nm.partitionOf(nm.Compacted, 0, victim)
		if err != nil || cur.Leader <= 0 {
			continue
		}
		if shrunk.IsZero() {
			if slices.Contains(cur.ISR, victim.ID) {
				continue
			}
			shrunk = time.Now()
			nm.h.Add("note", kind, victim.ID, "out of the ISR of %s/0 after %v (leader %d, epoch %d, ISR %v)",
				nm.Compacted, shrunk.Sub(start).Round(time.Millisecond), cur.Leader, cur.LeaderEpoch, cur.ISR)
		}
		leader = cur.Leader
		if done = nm.c.Node(leader).compactions(nm.Compacted, shrunk); done >= 2 {
			break
		}
	}
	if shrunk.IsZero() {
		nm.h.Add("note", kind, victim.ID, "still in the ISR of %s/0 after %v", nm.Compacted, bound)
	} else {
		nm.h.Add("note", kind, victim.ID, "leader %d compacted %s/0 %d times since the follower left the ISR", leader, nm.Compacted, done)
	}
	if leader > 0 {
		nm.h.Add("note", kind, victim.ID, "%s", whereLEO(victim, nm.c.Node(leader), nm.Compacted))
	}
	if freeze {
		victim.Unpause()
		nm.h.Add("heal", kind, victim.ID, "thawed after %v", time.Since(start).Round(time.Millisecond))
	} else {
		victim.Start()
		nm.h.Add("heal", kind, victim.ID, "started again after %v", time.Since(start).Round(time.Millisecond))
	}
}

// whereLEO describes where the stopped follower's log end falls in the
// leader's log of topic's partition 0, read from their data volumes:
// inside a compaction filler (an empty batch of no producer spanning
// several offsets: the case of issue 10, hole 3), inside or at the start
// of another batch. The leader's files may change while they are read
// (compaction swaps segments); this is an observation for the history.
func whereLEO(follower, leader *Node, topic string) string {
	dir := func(n *Node) string { return filepath.Join(n.DataDir(), "logs", topic+"-0") }
	fb, err := samsatest.ReadReplicaBatches(dir(follower))
	if err != nil || len(fb) == 0 {
		return fmt.Sprintf("follower's log end unknown (%d batches, %v)", len(fb), err)
	}
	leo := fb[len(fb)-1].Last + 1
	lb, err := samsatest.ReadReplicaBatches(dir(leader))
	if err != nil {
		return fmt.Sprintf("follower's log end %d; leader's log unreadable: %v", leo, err)
	}
	fillers := 0
	where := "beyond the leader's log"
	for _, b := range lb {
		h, err := klog.ParseBatchHeader(b.Bytes)
		if err != nil {
			continue
		}
		filler := h.RecordCount == 0 && h.ProducerID < 0 && !h.IsControl() && b.Last > b.Base
		if filler {
			fillers++
		}
		if b.Base <= leo && leo <= b.Last {
			switch {
			case filler && b.Base < leo:
				where = fmt.Sprintf("INSIDE a compaction filler [%d, %d]", b.Base, b.Last)
			case b.Base == leo:
				where = fmt.Sprintf("at the start of a batch [%d, %d] of %d records", b.Base, b.Last, h.RecordCount)
			default:
				where = fmt.Sprintf("inside a batch [%d, %d] of %d records", b.Base, b.Last, h.RecordCount)
			}
		}
	}
	return fmt.Sprintf("follower's log end %d is %s of leader %d's log (%d fillers in it)", leo, where, leader.ID, fillers)
}

// partitionOf asks the brokers in turn (but skip) for a partition's state.
func (nm *Nemesis) partitionOf(topic string, p int32, skip *Node) (PartitionState, error) {
	var last error
	for _, n := range nm.c.Nodes {
		if n == skip {
			continue
		}
		st, err := n.Partition(topic, p)
		if err == nil {
			return st, nil
		}
		last = err
	}
	return PartitionState{}, last
}

// CheckCompacted checks the compacted topic's outcome: acked is every
// acknowledged keyed write (values from keyedValue), final the topic read
// back after healing. Compaction may remove a record only when a later
// record of its key is kept, so it reports
//   - compacted-lost: an acknowledged value that is not in the final log
//     at its offset, while no later record of its key is (the latest
//     acknowledged value of a key must survive), or another value is at
//     its offset;
//   - compacted-offset-conflict: two values acknowledged at one offset.
//
// It also returns the values stored at more than one offset: the keyed
// producer is not idempotent, so a retried write may be stored twice.
func CheckCompacted(acked map[string]Ack, final map[int32]map[int64]string) (out []Anomaly, dups []string) {
	type pk struct {
		p   int32
		key string
	}
	latest := map[pk]int64{}
	stored := map[string][]Ack{}
	for p, byOff := range final {
		for o, v := range byOff {
			stored[v] = append(stored[v], Ack{Partition: p, Offset: o})
			k := pk{p, keyOf(v)}
			if cur, ok := latest[k]; !ok || o > cur {
				latest[k] = o
			}
		}
	}
	byPos := map[Ack]string{}
	for _, v := range slices.Sorted(maps.Keys(acked)) {
		a := acked[v]
		pos := Ack{Partition: a.Partition, Offset: a.Offset}
		if other, ok := byPos[pos]; ok {
			out = append(out, Anomaly{"compacted-offset-conflict", a.At, fmt.Sprintf("%s and %s both acknowledged at partition %d offset %d", other, v, a.Partition, a.Offset)})
		}
		byPos[pos] = v
		got, ok := final[a.Partition][a.Offset]
		switch {
		case ok && got == v:
		case ok:
			out = append(out, Anomaly{"compacted-lost", a.At, fmt.Sprintf("%s acknowledged at partition %d offset %d, final log has %q there", v, a.Partition, a.Offset, got)})
		default:
			if o, kept := latest[pk{a.Partition, keyOf(v)}]; !kept || o < a.Offset {
				where := "no record of the key"
				if kept {
					where = fmt.Sprintf("the key's latest record at offset %d", o)
				}
				out = append(out, Anomaly{"compacted-lost", a.At, fmt.Sprintf("%s acknowledged at partition %d offset %d is gone and the final log has %s", v, a.Partition, a.Offset, where)})
			}
		}
	}
	for v, at := range stored {
		if len(at) > 1 {
			dups = append(dups, fmt.Sprintf("%s at %s", v, positions(at)))
		}
	}
	sort.Strings(dups)
	return out, dups
}

// CheckCompactedReplicas checks a compacted topic on the brokers' data
// volumes: on every replica leader epochs never decrease and offsets are
// contiguous (compaction keeps batch offsets; emptied runs become filler
// batches spanning them), and every ISR member reaches the high watermark
// and holds the same latest value for every key below it (each replica
// compacts on its own: replicas agree on keys' latest values, not on
// bytes). It tries until the check passes or timeout and returns the last
// failure.
func (c *Cluster) CheckCompactedReplicas(topic string, partitions int32, timeout time.Duration) error {
	c.t.Helper()
	return c.checkPartitions(topic, partitions, timeout, func(p int32, st PartitionState, hw int64, replicaDir func(int32) string) error {
		var ref map[string]string
		refID := int32(-1)
		for _, r := range slices.Sorted(slices.Values(st.Replicas)) {
			dir := replicaDir(r)
			batches, err := samsatest.ReadReplicaBatches(dir)
			if err != nil {
				return fmt.Errorf("%s/%d replica %d: %v", topic, p, r, err)
			}
			if err := samsatest.CheckEpochs(dir, batches); err != nil {
				return fmt.Errorf("%s/%d replica %d: %v", topic, p, r, err)
			}
			if !slices.Contains(st.ISR, r) {
				continue
			}
			latest, reached, err := latestBelow(batches, hw)
			if err != nil {
				return fmt.Errorf("%s/%d replica %d: %v", topic, p, r, err)
			}
			if reached < hw {
				return fmt.Errorf("%s/%d: ISR member %d holds offsets up to %d, below the high watermark %d", topic, p, r, reached, hw)
			}
			if ref == nil {
				ref, refID = latest, r
				continue
			}
			if d := diffLatest(ref, latest); d != "" {
				return fmt.Errorf("%s/%d (ISR %v, high watermark %d): ISR members %d and %d disagree on keys' latest values: %s", topic, p, st.ISR, hw, refID, r, d)
			}
		}
		return nil
	})
}

// latestBelow is each key's latest value ("offset value") below hw in a
// replica's batches, and the offset the batches reach.
func latestBelow(batches []samsatest.RawBatch, hw int64) (map[string]string, int64, error) {
	out := map[string]string{}
	reached := int64(0)
	for _, b := range batches {
		if b.Base >= hw {
			break
		}
		reached = b.Last + 1
		h, err := klog.ParseBatchHeader(b.Bytes)
		if err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %v", b.Base, err)
		}
		if h.IsControl() {
			continue
		}
		err = records.ForEachRecord(b.Bytes, &h, 0, func(r records.Record) bool {
			o := b.Base + int64(r.OffsetDelta)
			if o < hw {
				out[string(r.Key)] = fmt.Sprintf("%d %s", o, r.Value)
			}
			return true
		})
		if err != nil {
			return nil, 0, fmt.Errorf("batch at %d: %v", b.Base, err)
		}
	}
	return out, reached, nil
}

// diffLatest describes the first few keys on which two replicas' latest
// values differ ("" if none).
func diffLatest(a, b map[string]string) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if a[k] != b[k] {
			d = append(d, fmt.Sprintf("key %q: %q vs %q", k, a[k], b[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("key %q: none vs %q", k, b[k]))
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("and %d more", len(d)-5))
	}
	return strings.Join(d, "; ")
}
