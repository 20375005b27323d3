package docker

// Faults that move leadership while every broker stays alive (or comes
// back at once): preferred-leader elections, automatic rebalancing, a
// controlled shutdown and restart, and a follower slowed down (stopped and
// resumed many times a second) so that acks=all waits are long.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicLeaders is every partition of some topics as one broker's metadata
// shows it: leader and replicas (the first one preferred).
type topicLeaders map[string]map[int32]PartitionState

// leaders asks the brokers in turn (skipping skip, if not nil) for the
// state of every partition of topics.
func (nm *Nemesis) leaders(skip *Node, topics ...string) (topicLeaders, error) {
	var last error
	for _, n := range nm.c.Nodes {
		if n == skip {
			continue
		}
		md, err := n.metadata(topics...)
		if err != nil {
			last = err
			continue
		}
		out := topicLeaders{}
		for _, t := range md.Topics {
			if t.Topic == nil {
				continue
			}
			if t.ErrorCode != 0 {
				err = fmt.Errorf("broker %d: topic %s: %v", n.ID, *t.Topic, kerr.ErrorForCode(t.ErrorCode))
				break
			}
			ps := map[int32]PartitionState{}
			for _, p := range t.Partitions {
				ps[p.Partition] = PartitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas, ISR: p.ISR}
			}
			out[*t.Topic] = ps
		}
		if err == nil {
			return out, nil
		}
		last = err
	}
	return nil, last
}

// nonPreferred lists the partitions not led by their preferred (first)
// replica, e.g. "campaign/1(2, not 3) __consumer_offsets/7(1, not 2)",
// and their number.
func (tl topicLeaders) nonPreferred() (string, int) {
	var s []string
	for _, t := range slices.Sorted(maps.Keys(tl)) {
		for _, p := range sortedPartitions(tl[t]) {
			st := tl[t][p]
			if len(st.Replicas) > 0 && st.Leader != st.Replicas[0] {
				s = append(s, fmt.Sprintf("%s/%d(%d, not %d)", t, p, st.Leader, st.Replicas[0]))
			}
		}
	}
	if len(s) == 0 {
		return "none", 0
	}
	return strings.Join(s, " "), len(s)
}

// ledBy counts the partitions broker id leads.
func (tl topicLeaders) ledBy(id int32) int {
	n := 0
	for _, ps := range tl {
		for _, st := range ps {
			if st.Leader == id {
				n++
			}
		}
	}
	return n
}

// leadershipTopics are the topics whose leaders the leadership faults
// move: the workload topic, the compacted topic if any, and
// __consumer_offsets.
func (nm *Nemesis) leadershipTopics() []string {
	ts := []string{nm.topic}
	if nm.Compacted != "" {
		ts = append(ts, nm.Compacted)
	}
	return append(ts, offsetsTopic)
}

// offsetsTopic is the group coordinator's internal topic.
const offsetsTopic = "__consumer_offsets"

// unbalance moves leadership away from a random broker with a controlled
// restart (SIGTERM: its leaderships move to other replicas; it comes back
// as a follower everywhere) and waits until it is back in every ISR, so
// that its preferred partitions are led by other brokers while their
// preferred replica is eligible again. It returns the broker and the
// partitions then led by a non-preferred replica.
func (nm *Nemesis) unbalance(kind FaultKind) (*Node, string, int, error) {
	victim := nm.randomBroker()
	before := "unknown"
	if tl, err := nm.leaders(nil, nm.leadershipTopics()...); err == nil {
		before = fmt.Sprintf("it leads %d partitions", tl.ledBy(victim.ID))
	}
	nm.h.Add("inject", kind, victim.ID, "controlled restart (SIGTERM, then start) to move its leaderships away (%s)", before)
	start := time.Now()
	victim.Restart()
	nm.h.Add("note", kind, victim.ID, "restarted after %v", time.Since(start).Round(time.Millisecond))
	if err := nm.WaitHealthy(nm.healthy); err != nil {
		return victim, "", 0, err
	}
	tl, err := nm.leaders(nil, nm.leadershipTopics()...)
	if err != nil {
		nm.h.Add("note", kind, 0, "leaders unknown: %v", err)
		return victim, "unknown", -1, nil
	}
	list, n := tl.nonPreferred()
	nm.h.Add("note", kind, victim.ID, "back in every ISR, leads %d partitions; %d partitions led by a non-preferred replica: %s", tl.ledBy(victim.ID), n, list)
	return victim, list, n, nil
}

// preferredElection is FaultPreferredElection: after unbalance, a
// preferred-leader election (ElectLeaders, PREFERRED) for every partition
// of the leadership topics, under load.
func (nm *Nemesis) preferredElection() error {
	kind := FaultPreferredElection
	victim, _, _, err := nm.unbalance(kind)
	if err != nil {
		return err
	}
	tl, err := nm.leaders(nil, nm.leadershipTopics()...)
	if err != nil {
		nm.h.Add("heal", kind, victim.ID, "no election: leaders unknown (%v)", err)
		return nil
	}
	set, total := kadm.TopicsSet{}, 0
	for t, ps := range tl {
		set[t] = map[int32]struct{}{}
		for p := range ps {
			set[t][p] = struct{}{}
			total++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	res, err := nm.c.Admin().ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		nm.h.Add("heal", kind, victim.ID, "ElectLeaders(PREFERRED) failed after %v: %v", took, err)
		return nil
	}
	outcomes := map[string]int{}
	var elected []string
	for t, ps := range res {
		for p, r := range ps {
			switch {
			case r.Err == nil:
				outcomes["elected"]++
				elected = append(elected, fmt.Sprintf("%s/%d", t, p))
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				outcomes["not needed"]++
			default:
				outcomes[r.Err.Error()]++
			}
		}
	}
	sort.Strings(elected)
	var s []string
	for _, k := range slices.Sorted(maps.Keys(outcomes)) {
		s = append(s, fmt.Sprintf("%s: %d", k, outcomes[k]))
	}
	after := "unknown"
	if tl, err := nm.leaders(nil, nm.leadershipTopics()...); err == nil {
		list, n := tl.nonPreferred()
		after = fmt.Sprintf("%d (%s)", n, list)
	}
	nm.h.Add("heal", kind, victim.ID, "ElectLeaders(PREFERRED) of %d partitions answered after %v: %s; elected %s; non-preferred leaders now %s",
		total, took, strings.Join(s, ", "), strings.Join(elected, " "), after)
	return nil
}

// autoRebalance is FaultAutoRebalance: after unbalance, a wait until the
// controller's automatic rebalance (auto.leader.rebalance.enable, every
// leader.imbalance.check.interval.seconds) has given every partition back
// to its preferred replica. Not getting there within two intervals and
// 15 s is a liveness failure.
func (nm *Nemesis) autoRebalance() error {
	kind := FaultAutoRebalance
	if nm.RebalanceInterval <= 0 {
		nm.h.Add("note", kind, 0, "the cluster does not rebalance automatically, skipped")
		return nil
	}
	victim, _, _, err := nm.unbalance(kind)
	if err != nil {
		return err
	}
	bound := 2*nm.RebalanceInterval + 15*time.Second
	start := time.Now()
	last := "unknown"
	for {
		tl, err := nm.leaders(nil, nm.leadershipTopics()...)
		if err == nil {
			list, n := tl.nonPreferred()
			if n == 0 {
				nm.h.Add("heal", kind, victim.ID, "every partition led by its preferred replica %v later (rebalance interval %v)",
					time.Since(start).Round(time.Millisecond), nm.RebalanceInterval)
				return nil
			}
			last = list
		} else {
			last = err.Error()
		}
		if time.Since(start) > bound {
			nm.h.Add("unhealthy", kind, victim.ID, "automatic rebalance left partitions on non-preferred leaders for %v: %s", bound, last)
			return fmt.Errorf("automatic rebalance did not restore preferred leaders within %v: %s", bound, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// controlledRestart is FaultControlledRestart: SIGTERM (a controlled
// shutdown: the broker hands its leaderships over before it exits) of the
// leader of a random workload partition or of the group's coordinator,
// down for a while, then started again.
func (nm *Nemesis) controlledRestart() {
	kind := FaultControlledRestart
	var victim *Node
	detail := "random broker"
	p := nm.rnd.Int32N(nm.parts)
	if nm.Group != "" && nm.rnd.IntN(2) == 0 {
		if id, err := nm.c.GroupCoordinator(nm.Group); err == nil && id > 0 {
			victim, detail = nm.c.Node(id), "coordinator of group "+nm.Group
		} else {
			nm.h.Add("note", kind, 0, "coordinator of %s unknown (%v)", nm.Group, err)
		}
	}
	if victim == nil {
		if st, err := nm.partition(p); err == nil && st.Leader > 0 {
			victim = nm.c.Node(st.Leader)
			detail = fmt.Sprintf("leader of %s/%d (epoch %d)", nm.topic, p, st.LeaderEpoch)
		} else {
			nm.h.Add("note", kind, 0, "leader of %s/%d unknown (%v), a random broker", nm.topic, p, err)
			victim = nm.randomBroker()
		}
	}
	led := "unknown"
	if tl, err := nm.leaders(nil, nm.leadershipTopics()...); err == nil {
		led = fmt.Sprint(tl.ledBy(victim.ID))
	}
	hold := nm.hold()
	nm.h.Add("inject", kind, victim.ID, "SIGTERM (controlled shutdown) of the %s, leading %s partitions; down for %v", detail, led, hold)
	start := time.Now()
	victim.Stop()
	after := ""
	if tl, err := nm.leaders(victim, nm.leadershipTopics()...); err == nil {
		after = fmt.Sprintf("; it leads %d partitions in the others' metadata, %s/%d is led by %d", tl.ledBy(victim.ID), nm.topic, p, tl[nm.topic][p].Leader)
	}
	nm.h.Add("note", kind, victim.ID, "stopped after %v%s", time.Since(start).Round(time.Millisecond), after)
	time.Sleep(hold)
	victim.Start()
	nm.h.Add("heal", kind, victim.ID, "started again")
}

// slowFollower is FaultSlowFollower: a follower of a random workload
// partition is stopped and resumed (SIGSTOP, SIGCONT of its process) in
// short cycles for a while: alive and registered, in every ISR, but
// slow, so acks=all produce requests (several partitions each) wait long
// for it.
func (nm *Nemesis) slowFollower() {
	kind := FaultSlowFollower
	p := nm.rnd.Int32N(nm.parts)
	var victim *Node
	detail := "random broker"
	if st, err := nm.partition(p); err == nil && st.Leader > 0 {
		var followers []int32
		for _, r := range st.Replicas {
			if r != st.Leader {
				followers = append(followers, r)
			}
		}
		if len(followers) > 0 {
			victim = nm.c.Node(followers[nm.rnd.IntN(len(followers))])
			detail = fmt.Sprintf("follower of %s/%d (leader %d, epoch %d)", nm.topic, p, st.Leader, st.LeaderEpoch)
		}
	}
	if victim == nil {
		victim = nm.randomBroker()
	}
	hold := nm.hold() + 3*time.Second
	stopped := time.Duration(100+nm.rnd.IntN(150)) * time.Millisecond
	running := time.Duration(100+nm.rnd.IntN(100)) * time.Millisecond
	nm.h.Add("inject", kind, victim.ID, "%s slowed: SIGSTOP for %v, SIGCONT for %v, in turn for %v", detail, stopped, running, hold)
	start := time.Now()
	cycles, err := victim.stopCycles(hold, stopped, running)
	acks := ""
	if nm.Latency != nil {
		// The workload's acknowledgements while the follower was slow,
		// and over as long before.
		end := time.Now()
		acks = fmt.Sprintf("; while slowed: %s; before: %s", nm.Latency(start, end), nm.Latency(start.Add(-end.Sub(start)), start))
	}
	if err != nil {
		nm.h.Add("heal", kind, victim.ID, "after %d cycles: %v%s", cycles, err, acks)
		return
	}
	nm.h.Add("heal", kind, victim.ID, "resumed after %d cycles%s", cycles, acks)
}

// stopCycles stops and resumes the broker's process (SIGSTOP, SIGCONT)
// in turn, stopped for `stopped` and running for `running`, until d has
// passed, and leaves it running. The signals go straight to its process
// (a docker command per signal would take about as long as a cycle); the
// process's start time is checked before each signal, so a broker that
// exited and was started again (another process, maybe the pid reused)
// ends the cycles.
func (n *Node) stopCycles(d, stopped, running time.Duration) (int, error) {
	pidStr, err := n.pid()
	if err != nil || pidStr == "" {
		return 0, fmt.Errorf("broker %d not running (%v)", n.ID, err)
	}
	var pid int
	fmt.Sscan(pidStr, &pid)
	started, err := procStart(pid)
	if err != nil {
		return 0, err
	}
	signal := func(sig syscall.Signal) error {
		if s, err := procStart(pid); err != nil || s != started {
			return fmt.Errorf("broker %d's process %d is gone (%v)", n.ID, pid, err)
		}
		return syscall.Kill(pid, sig)
	}
	defer signal(syscall.SIGCONT)
	end := time.Now().Add(d)
	cycles := 0
	for time.Now().Before(end) {
		if err := signal(syscall.SIGSTOP); err != nil {
			return cycles, err
		}
		time.Sleep(stopped)
		if err := signal(syscall.SIGCONT); err != nil {
			return cycles, err
		}
		cycles++
		time.Sleep(running)
	}
	return cycles, nil
}

// procStart is a process's start time (field 22 of /proc/PID/stat).
func procStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return f[19], nil
}
