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
// from first, over the live brokers (sorted). Partition p's preferred
// leader is brokers[(start+p) % len], its followers the next brokers in
// order, so leaders and replicas spread evenly. start is chosen at random
// per topic so that topics do not all lead on the same broker. Rack
// awareness arrives with the replication issue (#3).
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
