package broker

import (
	"fmt"
	"testing"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// recoverySnapshot builds a snapshot of topic "t" whose partition i has
// states[i] (replicas 1, 2, 3), with brokers registered as given:
// 'r' recovering, 's' shutting down, 'l' live, absent = not registered.
func recoverySnapshot(brokers map[int32]byte, states ...meta.PartitionState) *coord.Snapshot {
	s := &coord.Snapshot{
		Brokers:    map[int32]coord.VersionedBroker{},
		Topics:     map[string]coord.VersionedTopic{},
		Partitions: map[string][]coord.VersionedPartition{},
	}
	for id, kind := range brokers {
		s.Brokers[id] = coord.VersionedBroker{Broker: meta.Broker{ID: id, Recovering: kind == 'r', ShuttingDown: kind == 's'}}
	}
	t := meta.Topic{Name: "t"}
	for i, st := range states {
		t.Partitions = append(t.Partitions, []int32{1, 2, 3})
		st.Topic, st.Partition = "t", int32(i)
		s.Partitions["t"] = append(s.Partitions["t"], coord.VersionedPartition{PartitionState: st, ModRevision: int64(10 + i)})
	}
	s.Topics["t"] = coord.VersionedTopic{Topic: t}
	return s
}

func TestRecoveryBlockers(t *testing.T) {
	st := func(leader int32, isr ...int32) meta.PartitionState {
		return meta.PartitionState{Leader: leader, LeaderEpoch: 3, ISR: isr}
	}
	tests := []struct {
		name    string
		brokers map[int32]byte
		state   meta.PartitionState
		blocked bool
	}{
		{"in an ISR with a live leader", map[int32]byte{1: 'r', 2: 'l', 3: 'l'}, st(2, 2, 1), true},
		{"removed from the ISR", map[int32]byte{1: 'r', 2: 'l', 3: 'l'}, st(2, 2, 3), false},
		{"still named leader", map[int32]byte{1: 'r', 2: 'l', 3: 'l'}, st(1, 1), true},
		{"sole ISR member of an offline partition", map[int32]byte{1: 'r', 2: 'l', 3: 'l'}, st(-1, 1), false},
		{"in an ISR with a dead member", map[int32]byte{1: 'r', 2: 'l'}, st(-1, 1, 3), true},
		{"in an ISR with a member in controlled shutdown", map[int32]byte{1: 'r', 2: 's', 3: 'l'}, st(2, 2, 1), true},
		{"in an ISR of recovering brokers only", map[int32]byte{1: 'r', 2: 'r', 3: 'l'}, st(-1, 1, 2), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := recoverySnapshot(tt.brokers, tt.state)
			got := recoveryBlockers(s, 1)
			if blocked := len(got) > 0; blocked != tt.blocked {
				t.Fatalf("blockers %v, want blocked = %v", got, tt.blocked)
			}
			if tt.blocked && fmt.Sprint(got) != "[t/0]" {
				t.Fatalf("blockers %v, want [t/0]", got)
			}
		})
	}
	// Only known partitions count: a state beyond the assignment (a
	// partition being deleted) is the controller's to ignore, and ours.
	s := recoverySnapshot(map[int32]byte{1: 'r', 2: 'l'}, st(2, 2, 3), st(1, 1, 2))
	s.Topics["t"] = coord.VersionedTopic{Topic: meta.Topic{Name: "t", Partitions: [][]int32{{1, 2, 3}}}}
	if got := recoveryBlockers(s, 1); len(got) != 0 {
		t.Fatalf("blockers %v from a partition outside the assignment", got)
	}
}

func TestMayJoinISR(t *testing.T) {
	s := recoverySnapshot(map[int32]byte{1: 'l', 2: 'r', 3: 's'})
	for id, want := range map[int32]bool{1: true, 2: false, 3: false, 4: false} {
		if got := mayJoinISR(s, id); got != want {
			t.Errorf("mayJoinISR(%d) = %v, want %v", id, got, want)
		}
	}
}
