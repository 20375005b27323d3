package controller

import (
	"errors"
	"fmt"
	"slices"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ElectionKind is an ElectLeaders election type.
type ElectionKind int8

// Election kinds, with Kafka's numbers.
const (
	Preferred ElectionKind = 0
	Unclean   ElectionKind = 1
)

// Errors of a requested election; the broker maps them to Kafka codes.
var (
	ErrNotController               = errors.New("controller: not the active controller")
	ErrElectionNotNeeded           = errors.New("controller: election not needed")
	ErrPreferredLeaderNotAvailable = errors.New("controller: preferred leader not available")
	ErrEligibleLeadersNotAvailable = errors.New("controller: no eligible leader available")
	ErrUnknownPartition            = errors.New("controller: unknown topic or partition")
)

// PlanElection decides a requested election for one partition. Live means
// eligible as in Plan: registered, not in controlled shutdown, not
// recovering from an unclean shutdown.
//   - Preferred: the first replica of the assignment becomes leader if it is
//     live and in the ISR (else ErrPreferredLeaderNotAvailable; nothing to
//     do if it already leads: ErrElectionNotNeeded).
//   - Unclean: only for a partition without a live leader; a live ISR
//     replica is preferred, else any live replica (ISR = that replica),
//     else ErrEligibleLeadersNotAvailable.
func PlanElection(s *coord.Snapshot, kind ElectionKind, topic string, partition int32) (Change, error) {
	vt, ok := s.Topics[topic]
	vp, okState := s.Partition(topic, partition)
	if !ok || !okState || int(partition) >= len(vt.Topic.Partitions) {
		return Change{}, ErrUnknownPartition
	}
	replicas := vt.Topic.Partitions[partition]
	alive := eligible(s)
	cur := vp.PartitionState
	next := cur.Clone()
	next.PartitionEpoch++
	next.LeaderEpoch++
	change := func(leader int32, isr []int32, reason string) (Change, error) {
		next.Leader, next.ISR = leader, isr
		return Change{State: next, Previous: cur.Clone(), TopicID: vt.Topic.ID, ModRevision: vp.ModRevision, Reason: reason}, nil
	}
	switch kind {
	case Preferred:
		preferred := replicas[0]
		if cur.Leader == preferred {
			return Change{}, ErrElectionNotNeeded
		}
		if !alive(preferred) || !slices.Contains(cur.ISR, preferred) {
			return Change{}, ErrPreferredLeaderNotAvailable
		}
		return change(preferred, cur.ISR, fmt.Sprintf("preferred leader %d elected (requested, or the leader imbalance check)", preferred))
	case Unclean:
		if cur.Leader != meta.NoLeader && alive(cur.Leader) {
			return Change{}, ErrElectionNotNeeded
		}
		for _, r := range replicas {
			if alive(r) && slices.Contains(cur.ISR, r) {
				return change(r, slices.DeleteFunc(slices.Clone(cur.ISR), func(id int32) bool { return !alive(id) }), "leader elected from the ISR (requested unclean election: a live ISR member was found)")
			}
		}
		for _, r := range replicas {
			if alive(r) {
				c, err := change(r, []int32{r}, fmt.Sprintf("unclean leader election of %d, outside the ISR (requested)", r))
				c.Unclean = true
				return c, err
			}
		}
		return Change{}, ErrEligibleLeadersNotAvailable
	}
	return Change{}, fmt.Errorf("controller: unknown election type %d", kind)
}

// imbalancedPartitions returns, for automatic rebalancing, the partitions
// whose preferred leader is a live broker that leads less than it should:
// the share of its preferred partitions it does not lead exceeds
// maxImbalancePercent (Kafka's leader.imbalance.per.broker.percentage).
func imbalancedPartitions(s *coord.Snapshot, maxImbalancePercent int) []TopicPartition {
	type count struct{ preferred, notLed int }
	counts := map[int32]*count{}
	var candidates []TopicPartition
	for name, vt := range s.Topics {
		for p, replicas := range vt.Topic.Partitions {
			vp, ok := s.Partition(name, int32(p))
			if !ok || len(replicas) == 0 {
				continue
			}
			c := counts[replicas[0]]
			if c == nil {
				c = &count{}
				counts[replicas[0]] = c
			}
			c.preferred++
			if vp.Leader != replicas[0] {
				c.notLed++
				candidates = append(candidates, TopicPartition{name, int32(p)})
			}
		}
	}
	var out []TopicPartition
	for _, tp := range candidates {
		c := counts[s.Topics[tp.Topic].Topic.Partitions[tp.Partition][0]]
		if c.notLed*100 > maxImbalancePercent*c.preferred {
			out = append(out, tp)
		}
	}
	return out
}
