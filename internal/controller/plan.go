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
// fenced). A broker is eligible when it is registered, not in controlled
// shutdown and not recovering from an unclean shutdown:
//   - An eligible leader keeps its role; brokers that are not eligible are
//     removed from the ISR (the leader epoch stays, the partition epoch is
//     bumped).
//   - Any other leader (dead, absent, recovering, or in controlled shutdown)
//     is replaced by the first replica in assignment order that is eligible
//     and in the ISR: leader epoch + 1, ISR = its eligible members.
//   - With no eligible ISR member the partition goes offline: leader -1,
//     leader epoch + 1, the ISR left as it was, so that whichever of its
//     members returns first can be elected cleanly (each has every
//     committed record).
//   - A leader in controlled shutdown is replaced like a dead one when an
//     ISR replica can take over; otherwise it keeps leading until it stops.
//   - A recovering broker (meta.Broker.Recovering: restarted after an
//     unclean shutdown, so its log may lack what it had acknowledged)
//     counts as dead for the ISR and for elections, including a partition
//     it leads: that one moves to an eligible ISR member or goes offline,
//     so whenever the broker leads again it is in a new leader epoch. As
//     with dead members, the ISR is kept when no eligible member remains;
//     in particular a recovering last ISR member stays in it: without
//     eligible leader replicas (Kafka's ELR, KIP-966) the last ISR member
//     is the best copy there is. The broker clears its flag once no
//     partition names it leader and no ISR it is in has another member
//     that could hold more (internal/broker/recovery.go); it is then
//     elected like any returning ISR member. The rule reads the flag from
//     the snapshot rather than reacting to the broker's death, so a
//     registration replaced in place by a fast restart is caught too, and
//     a new controller after a failover sees the same flag in etcd.
//   - Only if the topic sets unclean.leader.election.enable does an
//     eligible replica outside the ISR become leader of an offline
//     partition (ISR = that replica alone), accepting the loss of committed
//     records.
package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// Change is one partition state write the controller decided on.
type Change struct {
	// State is the new state, Previous the one it replaces, of the
	// topic with id TopicID (the ISR history is kept by id).
	State, Previous meta.PartitionState
	TopicID         meta.TopicID
	// ModRevision is the etcd revision of the state it replaces (the CAS
	// condition).
	ModRevision int64
	// Reason says why, for the log and the partition's ISR history:
	// which brokers left and why they could not stay.
	Reason string
	// Unclean: the new leader comes from outside the ISR.
	Unclean bool
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
	// retriable errors. A recovering one counts as gone too.
	isEligible, why := eligible(s), ineligibility(s)
	// keepsLeading: a leader that is not eligible but may go on leading
	// while nobody can take over (one in controlled shutdown; a recovering
	// broker does not lead).
	keepsLeading := func(id int32) bool { b, ok := s.Brokers[id]; return ok && !b.Recovering }
	for _, name := range names {
		t := s.Topics[name].Topic
		for p, replicas := range t.Partitions {
			vp, ok := s.Partition(name, int32(p))
			if !ok {
				continue
			}
			if c, ok := planPartition(vp, replicas, isEligible, why, keepsLeading, func() bool { return unclean(t) }); ok {
				c.State.ControllerEpoch = epoch
				c.TopicID = t.ID
				out = append(out, c)
			}
		}
	}
	return out
}

// eligible reports whether a broker may be in an ISR and lead: registered,
// not in controlled shutdown, not recovering from an unclean shutdown.
func eligible(s *coord.Snapshot) func(id int32) bool {
	return func(id int32) bool {
		b, ok := s.Brokers[id]
		return ok && !b.ShuttingDown && !b.Recovering
	}
}

// ineligibility says why a broker may not be in an ISR nor lead (the
// reasons of eligible), for the ISR history.
func ineligibility(s *coord.Snapshot) func(id int32) string {
	return func(id int32) string {
		b, ok := s.Brokers[id]
		switch {
		case !ok:
			return fmt.Sprintf("broker %d is not registered (stopped, or its session was lost)", id)
		case b.ShuttingDown:
			return fmt.Sprintf("broker %d is in controlled shutdown", id)
		case b.Recovering:
			return fmt.Sprintf("broker %d is recovering from an unclean shutdown", id)
		}
		return ""
	}
}

func planPartition(vp coord.VersionedPartition, replicas []int32, isEligible func(int32) bool, why func(int32) string,
	keepsLeading func(int32) bool, unclean func() bool) (Change, bool) {
	cur := vp.PartitionState
	eligibleISR := slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return !isEligible(id) })
	next := cur.Clone()
	next.PartitionEpoch++
	// gone names the ISR members that must leave and why.
	var gone []string
	for _, id := range cur.ISR {
		if !isEligible(id) {
			gone = append(gone, why(id))
		}
	}
	change := func(reason string) (Change, bool) {
		if len(gone) > 0 {
			reason += ": " + strings.Join(gone, "; ")
		}
		return Change{State: next, Previous: cur.Clone(), ModRevision: vp.ModRevision, Reason: reason}, true
	}

	if cur.Leader != meta.NoLeader && isEligible(cur.Leader) {
		if len(eligibleISR) == len(cur.ISR) {
			return Change{}, false
		}
		next.ISR = eligibleISR
		return change("dead, shutting-down or recovering brokers removed from the ISR")
	}
	for _, r := range replicas {
		if isEligible(r) && slices.Contains(cur.ISR, r) {
			next.Leader, next.LeaderEpoch, next.ISR = r, cur.LeaderEpoch+1, eligibleISR
			return change("leader elected from the ISR")
		}
	}
	if unclean() {
		for _, r := range replicas {
			if isEligible(r) {
				next.Leader, next.LeaderEpoch, next.ISR = r, cur.LeaderEpoch+1, []int32{r}
				c, ok := change(fmt.Sprintf("unclean leader election of %d, outside the ISR", r))
				c.Unclean = true
				return c, ok
			}
		}
	}
	if cur.Leader == meta.NoLeader {
		return Change{}, false // already offline
	}
	if keepsLeading(cur.Leader) {
		// A leader in controlled shutdown with nobody to hand over to keeps
		// serving until it is gone.
		return Change{}, false
	}
	next.Leader, next.LeaderEpoch = meta.NoLeader, cur.LeaderEpoch+1
	return change("no eligible ISR member: partition offline")
}
