package docker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGroupWorkload: two members of a consumer group read a topic
// replicated three times under acks=all load, committing after each poll,
// while the group's coordinator is killed (kill -9) and started again. Once
// the cluster has healed and the group has read every acknowledged value,
// the history must show no anomaly (CheckGroup): nothing acknowledged
// unread, nothing read that the log later lost, no acknowledged commit
// lost, no commit beyond the log, and each member's offsets strictly
// increasing while it owns a partition.
func TestGroupWorkload(t *testing.T) {
	const (
		topic      = "groups"
		group      = "workload"
		partitions = 4
	)
	began := time.Now()
	c := Start(t, 3)
	c.CreateTopic(topic, partitions, 3, rf3)
	t.Logf("3 brokers up, topic %s ready in %v", topic, time.Since(began).Round(time.Millisecond))

	h := NewHistory()
	p := c.StartProducer(topic, 5*time.Millisecond)
	g := c.StartGroup(topic, group, 2)
	h.Add("note", "", 0, "producer and group of 2 started")
	p.WaitAcked(t, -1, 200, 30*time.Second)
	c.WaitFor(30*time.Second, func() error {
		if n := g.Count(); n < 100 {
			return fmt.Errorf("the group read %d records", n)
		}
		return nil
	})
	var coordinator int32
	c.WaitFor(10*time.Second, func() error {
		id, err := c.GroupCoordinator(group)
		coordinator = id
		return err
	})
	h.Add("note", "", 0, "group read %d records; %d acknowledged", g.Count(), p.Acked(-1))

	victim := c.Node(coordinator)
	h.Add("inject", FaultKillCoordinator, victim.ID, "kill -9 of group %s's coordinator, for 3s", group)
	victim.Kill()
	time.Sleep(3 * time.Second)
	victim.Start()
	h.Add("heal", FaultKillCoordinator, victim.ID, "started again")
	healStart := time.Now()
	c.WaitFor(45*time.Second, func() error {
		if err := c.fullISRs(topic); err != nil {
			return err
		}
		return c.fullISRs("__consumer_offsets")
	})
	h.Add("healthy", "", 0, "every ISR of %s and __consumer_offsets full after %v", topic, time.Since(healStart).Round(time.Millisecond))
	if id, err := c.GroupCoordinator(group); err == nil {
		h.Add("note", "", 0, "coordinator now broker %d", id)
	}

	// Writes after healing, then let the group read everything.
	p.WaitAcked(t, -1, 200, 30*time.Second)
	acked, sent, failed := p.Stop(t)
	h.Add("note", "", 0, "producer stopped: %d sent, %d acknowledged, %d failed", sent, len(acked), failed)
	c.WaitFor(30*time.Second, func() error {
		if n := g.Unread(acked); n > 0 {
			return fmt.Errorf("%d of %d acknowledged values not read by the group", n, len(acked))
		}
		return nil
	})
	gh := g.Stop()
	h.Add("note", "", 0, "group stopped: %s", gh.Summary())
	for _, pr := range gh.StopProblems {
		t.Errorf("group stop: %s", pr)
	}

	var committed map[int32]int64
	c.WaitFor(30*time.Second, func() error {
		var err error
		committed, err = c.CommittedOffsets(group, topic)
		return err
	})
	final := c.ReadAll(topic)
	ends := map[int32]int64{}
	for part, byOff := range final {
		for o := range byOff {
			ends[part] = max(ends[part], o+1)
		}
	}
	anomalies := CheckGroup(acked, final, gh, committed)
	h.Add("note", "", 0, "committed offsets %v, log ends %v; %d anomalies", committed, ends, len(anomalies))
	t.Logf("history:\n%s", h)
	t.Logf("summary: %s; run took %v", gh.Summary(), time.Since(began).Round(time.Second))
	if len(anomalies) > 0 {
		t.Errorf("group workload failed: %s", Report(h, anomalies, 5))
	}
	if len(acked) == 0 {
		t.Errorf("no record acknowledged")
	}
}

// groupHistory builds made-up group histories, numbering entries in the
// order they are added.
type groupHistory struct {
	h  GroupHistory
	t0 time.Time
}

func (b *groupHistory) next() (int, time.Time) {
	n := len(b.h.Reads) + len(b.h.Commits) + len(b.h.Changes) + 1
	return n, b.t0.Add(time.Duration(n) * time.Millisecond)
}

func (b *groupHistory) change(member int, what string, ps ...int32) *groupHistory {
	seq, at := b.next()
	b.h.Changes = append(b.h.Changes, OwnershipChange{Seq: seq, Member: member, What: what, Generation: 1, Partitions: ps, At: at})
	return b
}

func (b *groupHistory) read(member int, p int32, offset int64, value string) *groupHistory {
	seq, at := b.next()
	b.h.Reads = append(b.h.Reads, GroupRead{Seq: seq, Member: member, Generation: 1, Partition: p, Offset: offset, Value: value, At: at})
	return b
}

func (b *groupHistory) commit(member int, p int32, offset int64, err error) *groupHistory {
	seq, at := b.next()
	b.h.Commits = append(b.h.Commits, GroupCommit{Seq: seq, Member: member, Generation: 1, Partition: p, Offset: offset, Err: err, At: at})
	return b
}

// TestCheckGroup checks the group checker on made-up histories (no
// Docker).
func TestCheckGroup(t *testing.T) {
	t0 := time.Now()
	acked := map[string]Ack{
		"a": {0, 0, t0}, "b": {0, 1, t0}, "c": {0, 2, t0},
		"d": {1, 0, t0}, "e": {1, 1, t0}, "z": {1, 2, t0},
	}
	final := map[int32]map[int64]string{
		0: {0: "a", 1: "b", 2: "c"},
		1: {0: "d", 1: "e", 2: "z"},
	}

	// A clean history: member 0 reads everything, gives partition 1 to
	// member 1, which reads it again from an older commit; member 1
	// loses it, gets it back and reads it again once more; member 0 gets
	// it back too, later. Re-reads after a change of ownership are fine.
	clean := (&groupHistory{t0: t0}).
		change(0, "assigned", 0, 1).
		read(0, 0, 0, "a").read(0, 0, 1, "b").read(0, 1, 0, "d").read(0, 1, 1, "e").
		commit(0, 0, 2, nil).commit(0, 1, 1, errors.New("NOT_COORDINATOR")).
		change(0, "revoked", 1).
		change(1, "assigned", 1).
		read(1, 1, 0, "d").read(1, 1, 1, "e").read(1, 1, 2, "z").
		commit(1, 1, 3, nil).
		read(0, 0, 2, "c").commit(0, 0, 3, nil).
		change(1, "lost", 1).change(1, "assigned", 1).read(1, 1, 2, "z").
		change(1, "revoked", 1).change(0, "assigned", 1).read(0, 1, 2, "z").
		h
	if got := CheckGroup(acked, final, clean, map[int32]int64{0: 3, 1: 3}); len(got) != 0 {
		t.Errorf("anomalies in a clean history: %v", got)
	}

	dirty := (&groupHistory{t0: t0}).
		change(0, "assigned", 0, 1).
		read(0, 0, 0, "a").read(0, 0, 1, "b").read(0, 0, 2, "c").
		read(0, 1, 0, "d").read(0, 1, 1, "e").
		// Read again while owning partition 0 all along.
		read(0, 0, 1, "b").
		// An acknowledged commit of partition 1 up to 3, and a failed one
		// of partition 0 at 9 (not held against anyone).
		commit(0, 1, 3, nil).commit(0, 0, 9, errors.New("REQUEST_TIMED_OUT")).
		change(0, "revoked", 1).
		change(1, "assigned", 1).
		// A value the final log does not have there; z is never read.
		read(1, 1, 2, "y").
		// Beyond the final log of partition 0.
		read(0, 0, 3, "w").
		h
	got := map[string]int{}
	anomalies := CheckGroup(acked, final, dirty, map[int32]int64{0: 4, 1: 2})
	for _, a := range anomalies {
		got[a.Check]++
	}
	// z unread; y at 1/2 and w at 0/3 not in the final log; partition 1
	// committed 2 after an acknowledged 3; partition 0 committed 4 past
	// its end 3; member 0 read 0/1 after 0/2.
	want := map[string]int{"group-lost": 1, "group-read-truncated": 2, "commit-lost": 1, "commit-beyond-log": 1, "group-non-monotonic": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("anomalies %v, want %v:\n%v", got, want, anomalies)
	}

	// A partition with acknowledged commits but no committed offset at
	// the end lost them too.
	if a := CheckGroup(acked, final, dirty, map[int32]int64{0: 3}); !hasCheck(a, "commit-lost", "offset 3 (generation 1) was acknowledged, the committed offset at the end is none") {
		t.Errorf("no commit-lost for a partition without a committed offset: %v", a)
	}

	h := NewHistory()
	h.Add("inject", FaultKillRandom, 2, "kill -9 of the coordinator")
	r := Report(h, anomalies, 5)
	for _, s := range []string{"VIOLATED commit-lost", "VIOLATED group-non-monotonic", "inject kill-random broker 2"} {
		if !strings.Contains(r, s) {
			t.Errorf("report lacks %q:\n%s", s, r)
		}
	}
}

func hasCheck(as []Anomaly, check, detail string) bool {
	for _, a := range as {
		if a.Check == check && strings.Contains(a.Detail, detail) {
			return true
		}
	}
	return false
}
