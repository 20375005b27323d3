package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// snapshot builds a one-topic snapshot: partition 0 with the given
// assignment and state, and the given live brokers.
func snapshot(replicas []int32, st meta.PartitionState, live ...int32) *coord.Snapshot {
	return snapshotShuttingDown(replicas, st, nil, live...)
}

// snapshotShuttingDown is snapshot with some live brokers in controlled
// shutdown.
func snapshotShuttingDown(replicas []int32, st meta.PartitionState, shuttingDown []int32, live ...int32) *coord.Snapshot {
	s := &coord.Snapshot{
		Brokers:    map[int32]coord.VersionedBroker{},
		Topics:     map[string]coord.VersionedTopic{"t": {Topic: meta.Topic{Name: "t", Partitions: [][]int32{replicas}}}},
		Partitions: map[string][]coord.VersionedPartition{},
	}
	for _, id := range live {
		s.Brokers[id] = coord.VersionedBroker{Broker: meta.Broker{ID: id, ShuttingDown: slices.Contains(shuttingDown, id)}}
	}
	st.Topic, st.Partition = "t", 0
	s.Partitions["t"] = []coord.VersionedPartition{{PartitionState: st, ModRevision: 42}}
	return s
}

func TestPlan(t *testing.T) {
	state := func(leader, epoch int32, isr ...int32) meta.PartitionState {
		return meta.PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr, PartitionEpoch: 7}
	}
	tests := []struct {
		name     string
		replicas []int32
		state    meta.PartitionState
		live     []int32
		unclean  bool
		want     string // "" = no change; else "leader epoch isr"
	}{
		{"all alive: nothing to do", []int32{1, 2, 3}, state(1, 4, 1, 2, 3), []int32{1, 2, 3}, false, ""},
		{"dead follower leaves the ISR", []int32{1, 2, 3}, state(1, 4, 1, 2, 3), []int32{1, 3}, false, "1 4 [1 3]"},
		{"dead leader: first live ISR replica in assignment order", []int32{1, 2, 3}, state(1, 4, 3, 1, 2), []int32{2, 3}, false, "2 5 [3 2]"},
		{"dead leader: replica outside the ISR is skipped", []int32{1, 2, 3}, state(1, 4, 1, 3), []int32{2, 3}, false, "3 5 [3]"},
		{"no live ISR member: offline, ISR kept", []int32{1, 2, 3}, state(1, 4, 1, 2), []int32{3}, false, "-1 5 [1 2]"},
		{"already offline: nothing to do", []int32{1, 2, 3}, state(-1, 5, 1, 2), []int32{3}, false, ""},
		{"offline, an ISR member returns: elected", []int32{1, 2, 3}, state(-1, 5, 1, 2), []int32{2, 3}, false, "2 6 [2]"},
		{"unclean election only when enabled", []int32{1, 2, 3}, state(1, 4, 1, 2), []int32{3}, true, "3 5 [3]"},
		{"unclean enabled but nothing alive: offline", []int32{1, 2}, state(1, 4, 1, 2), nil, true, "-1 5 [1 2]"},
		{"unclean enabled but a clean choice exists", []int32{1, 2, 3}, state(1, 4, 1, 2), []int32{2, 3}, true, "2 5 [2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot(tt.replicas, tt.state, tt.live...)
			changes := Plan(s, 99, func(meta.Topic) bool { return tt.unclean })
			got := ""
			if len(changes) > 1 {
				t.Fatalf("%d changes for one partition", len(changes))
			}
			if len(changes) == 1 {
				c := changes[0]
				got = fmt.Sprintf("%d %d %v", c.State.Leader, c.State.LeaderEpoch, c.State.ISR)
				if c.ModRevision != 42 || c.State.ControllerEpoch != 99 || c.State.PartitionEpoch != 8 {
					t.Fatalf("change %+v: want mod revision 42, controller epoch 99, partition epoch 8", c)
				}
				if c.State.Topic != "t" || c.State.Partition != 0 {
					t.Fatalf("change names %s/%d", c.State.Topic, c.State.Partition)
				}
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			// The input snapshot is shared by every reader: Plan must not
			// modify it.
			if cur := s.Partitions["t"][0].PartitionState; cur.LeaderEpoch != tt.state.LeaderEpoch || fmt.Sprint(cur.ISR) != fmt.Sprint(tt.state.ISR) {
				t.Fatalf("Plan modified the snapshot: %+v", cur)
			}
		})
	}
}

// Partitions without a stored state are left alone.
func TestPlanSkipsMissingStates(t *testing.T) {
	s := snapshot([]int32{1}, meta.PartitionState{Leader: 1, ISR: []int32{1}})
	s.Topics["t"] = coord.VersionedTopic{Topic: meta.Topic{Name: "t", Partitions: [][]int32{{1}, {1}}}}
	if got := Plan(s, 1, func(meta.Topic) bool { return false }); len(got) != 1 || got[0].State.Partition != 0 {
		t.Fatalf("got %+v, want one change for partition 0 only", got)
	}
}

// A broker in controlled shutdown hands its leadership to an ISR replica and
// leaves the ISRs; with nobody to take over, it keeps leading.
func TestPlanControlledShutdown(t *testing.T) {
	tests := []struct {
		name     string
		replicas []int32
		state    meta.PartitionState
		want     string
	}{
		{"leader hands over", []int32{1, 2, 3}, meta.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}}, "2 4 [2 3]"},
		{"follower leaves the ISR", []int32{2, 1, 3}, meta.PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1, 3}}, "2 3 [2 3]"},
		{"sole replica keeps leading", []int32{1}, meta.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}}, ""},
		{"no ISR replica to take over", []int32{1, 2}, meta.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshotShuttingDown(tt.replicas, tt.state, []int32{1}, 1, 2, 3)
			changes := Plan(s, 5, func(meta.Topic) bool { return false })
			got := ""
			if len(changes) == 1 {
				c := changes[0].State
				got = fmt.Sprintf("%d %d %v", c.Leader, c.LeaderEpoch, c.ISR)
			}
			if got != tt.want || len(changes) > 1 {
				t.Fatalf("got %q (%d changes), want %q", got, len(changes), tt.want)
			}
		})
	}
}
