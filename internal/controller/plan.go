// Package controller is the active controller: the one broker, elected
// through etcd, that elects partition leaders when brokers come and go.
//
// The decisions are a pure function of the cluster metadata (Plan), so they
// can be tested exactly; Run wraps them in the election and writes each
// decision as a compare-and-swap of the partition state, fenced by the
// controller epoch, so a deposed controller can write nothing.
//
// Rules, per partition (Kafka's, as its KRaft controller applies them when
// a broker is fenced or unfenced; a broker in controlled shutdown counts as
// fenced):
//   - A live leader keeps its role; dead brokers are removed from the ISR
//     (the leader epoch stays, the partition epoch is bumped).
//   - A dead (or absent) leader is replaced by the first replica in
//     assignment order that is alive and in the ISR: leader epoch + 1, ISR
//     = its live members.
//   - With no live ISR member the partition goes offline: leader -1, leader
//     epoch + 1, the ISR left as it was, so that whichever of its members
//     returns first can be elected cleanly (each has every committed
//     record).
//   - A leader in controlled shutdown is replaced like a dead one when an
//     ISR replica can take over; otherwise it keeps leading until it stops.
//   - Only if the topic sets unclean.leader.election.enable does a live
//     replica outside the ISR become leader of an offline partition (ISR =
//     that replica alone), accepting the loss of committed records.
//
// Not yet here (issue #3 continues): preferred-leader elections and
// automatic rebalancing, and
// fencing a broker that restarted faster than its session expired (its
// registration's create revision changes; ISR members should then be
// tracked by incarnation as in KIP-903).
package controller

import (
	"slices"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// Change is one partition state write the controller decided on.
type Change struct {
	// State is the new state.
	State meta.PartitionState
	// ModRevision is the etcd revision of the state it replaces (the CAS
	// condition).
	ModRevision int64
	// Reason says why, for the log.
	Reason string
}

// Plan returns the partition state changes that the metadata in s calls
// for, written by the controller of the given epoch. unclean reports
// whether a topic allows unclean leader election.
func Plan(s *coord.Snapshot, epoch int64, unclean func(meta.Topic) bool) []Change {
	var out []Change
	names := make([]string, 0, len(s.Topics))
	for name := range s.Topics {
		names = append(names, name)
	}
	slices.Sort(names)
	// A broker in controlled shutdown counts as gone: its leadership and
	// ISR memberships move away while it still serves, so clients see only
	// retriable errors.
	alive := func(id int32) bool { b, ok := s.Brokers[id]; return ok && !b.ShuttingDown }
	registered := func(id int32) bool { _, ok := s.Brokers[id]; return ok }
	for _, name := range names {
		t := s.Topics[name].Topic
		for p, replicas := range t.Partitions {
			vp, ok := s.Partition(name, int32(p))
			if !ok {
				continue
			}
			if c, ok := planPartition(vp, replicas, alive, registered, func() bool { return unclean(t) }); ok {
				c.State.ControllerEpoch = epoch
				out = append(out, c)
			}
		}
	}
	return out
}

func planPartition(vp coord.VersionedPartition, replicas []int32, alive, registered func(int32) bool, unclean func() bool) (Change, bool) {
	cur := vp.PartitionState
	liveISR := slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return !alive(id) })
	next := cur.Clone()
	next.PartitionEpoch++
	change := func(reason string) (Change, bool) {
		return Change{State: next, ModRevision: vp.ModRevision, Reason: reason}, true
	}

	if cur.Leader != meta.NoLeader && alive(cur.Leader) {
		if len(liveISR) == len(cur.ISR) {
			return Change{}, false
		}
		next.ISR = liveISR
		return change("dead brokers removed from the ISR")
	}
	for _, r := range replicas {
		if alive(r) && slices.Contains(cur.ISR, r) {
			next.Leader, next.LeaderEpoch, next.ISR = r, cur.LeaderEpoch+1, liveISR
			return change("leader elected from the ISR")
		}
	}
	if unclean() {
		for _, r := range replicas {
			if alive(r) {
				next.Leader, next.LeaderEpoch, next.ISR = r, cur.LeaderEpoch+1, []int32{r}
				return change("unclean leader election")
			}
		}
	}
	if cur.Leader == meta.NoLeader {
		return Change{}, false // already offline
	}
	if registered(cur.Leader) {
		// A leader in controlled shutdown with nobody to hand over to keeps
		// serving until it is gone.
		return Change{}, false
	}
	next.Leader, next.LeaderEpoch = meta.NoLeader, cur.LeaderEpoch+1
	return change("no live ISR member: partition offline")
}
