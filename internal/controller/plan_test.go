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
	return snapshotFlags(replicas, st, shuttingDown, nil, live...)
}

// snapshotFlags is snapshot with some live brokers in controlled shutdown
// and some recovering from an unclean shutdown.
func snapshotFlags(replicas []int32, st meta.PartitionState, shuttingDown, recovering []int32, live ...int32) *coord.Snapshot {
	s := &coord.Snapshot{
		Brokers:    map[int32]coord.VersionedBroker{},
		Topics:     map[string]coord.VersionedTopic{"t": {Topic: meta.Topic{Name: "t", Partitions: [][]int32{replicas}}}},
		Partitions: map[string][]coord.VersionedPartition{},
	}
	for _, id := range live {
		s.Brokers[id] = coord.VersionedBroker{Broker: meta.Broker{ID: id,
			ShuttingDown: slices.Contains(shuttingDown, id), Recovering: slices.Contains(recovering, id)}}
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

// A broker restarted after an unclean shutdown (Recovering) counts as dead
// for ISR membership and elections until it clears the flag, whether or
// not the controller saw it die: the flag is in the snapshot, so a
// registration replaced in place, or a new controller after a failover,
// gets the same answer.
func TestPlanRecovering(t *testing.T) {
	state := func(leader, epoch int32, isr ...int32) meta.PartitionState {
		return meta.PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr, PartitionEpoch: 7}
	}
	all := []int32{1, 2, 3}
	tests := []struct {
		name         string
		state        meta.PartitionState
		live         []int32
		recovering   []int32
		shuttingDown []int32
		unclean      bool
		want         string // "" = no change; else "leader epoch isr"
	}{
		{"recovering follower leaves the ISR", state(1, 4, 1, 2, 3), all, []int32{2}, nil, false, "1 4 [1 3]"},
		{"two recovering followers leave, the leader stays", state(1, 4, 1, 2, 3), all, []int32{2, 3}, nil, false, "1 4 [1]"},
		{"recovering broker outside the ISR: nothing to do", state(1, 4, 1, 3), all, []int32{2}, nil, false, ""},
		{"recovering leader: next eligible ISR replica, new epoch", state(1, 4, 1, 2, 3), all, []int32{1}, nil, false, "2 5 [2 3]"},
		{"recovering leader: a recovering ISR replica is skipped", state(1, 4, 1, 2, 3), all, []int32{1, 2}, nil, false, "3 5 [3]"},
		{"recovering leader, sole ISR member: offline, ISR kept", state(1, 4, 1), all, []int32{1}, nil, false, "-1 5 [1]"},
		{"offline, recovering sole ISR member: stays offline", state(-1, 5, 1), all, []int32{1}, nil, false, ""},
		{"offline, sole ISR member cleared its flag: elected", state(-1, 5, 1), all, nil, nil, false, "1 6 [1]"},
		{"dead leader, recovering follower: offline, ISR kept", state(1, 4, 1, 2), []int32{2, 3}, []int32{2}, nil, false, "-1 5 [1 2]"},
		{"every ISR member recovering: offline, ISR kept", state(1, 4, 1, 2), all, []int32{1, 2}, nil, false, "-1 5 [1 2]"},
		{"offline, every ISR member recovering: nothing to do", state(-1, 5, 1, 2), all, []int32{1, 2}, nil, false, ""},
		{"offline, one of two recovering members cleared: elected alone", state(-1, 5, 1, 2), all, []int32{2}, nil, false, "1 6 [1]"},
		{"unclean election skips a recovering replica", state(1, 4, 1), []int32{2, 3}, []int32{2}, nil, true, "3 5 [3]"},
		{"unclean enabled, only a recovering replica live: offline", state(1, 4, 1), []int32{2}, []int32{2}, nil, true, "-1 5 [1]"},
		{"recovering leader in controlled shutdown does not keep leading", state(1, 4, 1, 2), all, []int32{1, 2}, []int32{1}, false, "-1 5 [1 2]"},
		{"recovering and shutting-down followers both leave", state(1, 4, 1, 2, 3), all, []int32{2}, []int32{3}, false, "1 4 [1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshotFlags([]int32{1, 2, 3}, tt.state, tt.shuttingDown, tt.recovering, tt.live...)
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
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			// Applying the change leaves nothing more to do: no flapping.
			if len(changes) == 1 {
				next := snapshotFlags([]int32{1, 2, 3}, changes[0].State, tt.shuttingDown, tt.recovering, tt.live...)
				if again := Plan(next, 99, func(meta.Topic) bool { return tt.unclean }); len(again) != 0 {
					t.Fatalf("after %q, Plan wants another change: %+v", got, again[0].State)
				}
			}
		})
	}
}
