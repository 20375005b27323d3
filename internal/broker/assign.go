package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/samsa-io/samsa/internal/meta"
)

// errInvalidReplicationFactor reports a replication factor the live brokers
// cannot satisfy.
var errInvalidReplicationFactor = errors.New("broker: replication factor larger than the number of live brokers")

// assignReplicas assigns rf replicas to each of n new partitions, numbered
// from first, over the live brokers in placement order (see placement).
// Partition p's preferred leader is brokers[(start+p) % len], its followers
// the next brokers in order, so leaders and replicas spread evenly. start is
// chosen at random per topic so that topics do not all lead on the same
// broker.
func assignReplicas(brokers []int32, first, n int32, rf int16) ([][]int32, error) {
	if int(rf) > len(brokers) || rf < 1 {
		return nil, fmt.Errorf("%w: %d replicas, %d brokers", errInvalidReplicationFactor, rf, len(brokers))
	}
	start := rand.IntN(len(brokers))
	out := make([][]int32, n)
	for i := range out {
		p := int(first) + i
		replicas := make([]int32, rf)
		for j := range replicas {
			replicas[j] = brokers[(start+p+j)%len(brokers)]
		}
		out[i] = replicas
	}
	return out, nil
}

// initialStates returns the first partition states of new partitions:
// leader = the preferred replica, epoch 0, ISR = all replicas.
func initialStates(topic string, first int32, assignment [][]int32) []meta.PartitionState {
	out := make([]meta.PartitionState, len(assignment))
	for i, replicas := range assignment {
		out[i] = meta.PartitionState{
			Topic:     topic,
			Partition: first + int32(i),
			Leader:    replicas[0],
			ISR:       slices.Clone(replicas),
		}
	}
	return out
}

// validateAssignment checks a manual replica assignment: every partition has
// the same number of distinct replicas, all of them known brokers.
func validateAssignment(assignment [][]int32, brokers []int32) error {
	for i, replicas := range assignment {
		if len(replicas) == 0 {
			return fmt.Errorf("partition %d has no replicas", i)
		}
		if len(replicas) != len(assignment[0]) {
			return fmt.Errorf("partition %d has %d replicas, partition 0 has %d", i, len(replicas), len(assignment[0]))
		}
		seen := map[int32]bool{}
		for _, r := range replicas {
			if seen[r] {
				return fmt.Errorf("partition %d lists broker %d twice", i, r)
			}
			seen[r] = true
			if !slices.Contains(brokers, r) {
				return fmt.Errorf("partition %d: broker %d is not registered", i, r)
			}
		}
	}
	return nil
}

func sortInt32s(s []int32) { slices.Sort(s) }

// placement orders the live brokers for assignReplicas. With racks set
// (broker.rack), brokers of different racks alternate (rack A's first,
// rack B's first, ..., rack A's second, ...), as in Kafka's rack-aware
// assignment, so a partition's consecutive replicas sit on different racks
// and a replication factor up to the number of racks puts each replica on
// its own rack when the racks are evenly sized. A broker without a rack
// counts as a rack of its own name "". Without racks: the ids in order.
func placement(ids []int32, rackOf func(int32) string) []int32 {
	byRack := map[string][]int32{}
	var racks []string
	for _, id := range ids {
		r := rackOf(id)
		if _, ok := byRack[r]; !ok {
			racks = append(racks, r)
		}
		byRack[r] = append(byRack[r], id)
	}
	if len(racks) <= 1 {
		return ids
	}
	slices.Sort(racks)
	out := make([]int32, 0, len(ids))
	for i := 0; len(out) < len(ids); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}
