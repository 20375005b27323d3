package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

func TestPlanElection(t *testing.T) {
	tests := []struct {
		name  string
		kind  ElectionKind
		state meta.PartitionState
		live  []int32
		want  string
		err   error
	}{
		{"preferred restored", Preferred, meta.PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1, 3}}, []int32{1, 2, 3}, "1 4 [2 1 3]", nil},
		{"preferred already leads", Preferred, meta.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}}, []int32{1, 2, 3}, "", ErrElectionNotNeeded},
		{"preferred out of the ISR", Preferred, meta.PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 3}}, []int32{1, 2, 3}, "", ErrPreferredLeaderNotAvailable},
		{"preferred dead", Preferred, meta.PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1}}, []int32{2, 3}, "", ErrPreferredLeaderNotAvailable},
		{"unclean not needed with a leader", Unclean, meta.PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2}}, []int32{1, 2, 3}, "", ErrElectionNotNeeded},
		{"unclean takes a live replica", Unclean, meta.PartitionState{Leader: -1, LeaderEpoch: 3, ISR: []int32{1}}, []int32{2, 3}, "2 4 [2]", nil},
		{"unclean prefers the ISR", Unclean, meta.PartitionState{Leader: -1, LeaderEpoch: 3, ISR: []int32{3}}, []int32{2, 3}, "3 4 [3]", nil},
		{"unclean with nobody alive", Unclean, meta.PartitionState{Leader: -1, LeaderEpoch: 3, ISR: []int32{1}}, nil, "", ErrEligibleLeadersNotAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot([]int32{1, 2, 3}, tt.state, tt.live...)
			c, err := PlanElection(s, tt.kind, "t", 0)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			got := ""
			if err == nil {
				got = fmt.Sprintf("%d %d %v", c.State.Leader, c.State.LeaderEpoch, c.State.ISR)
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := PlanElection(snapshot([]int32{1}, meta.PartitionState{Leader: 1, ISR: []int32{1}}, 1), Preferred, "t", 5); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("unknown partition: %v", err)
	}
}

// A broker is rebalanced when the share of its preferred partitions it does
// not lead exceeds the threshold.
func TestImbalancedPartitions(t *testing.T) {
	s := &coord.Snapshot{
		Brokers:    map[int32]coord.VersionedBroker{1: {}, 2: {}},
		Topics:     map[string]coord.VersionedTopic{},
		Partitions: map[string][]coord.VersionedPartition{},
	}
	// Broker 1 prefers 10 partitions and leads 9 of them (10% not led);
	// broker 2 prefers 10 and leads 8 (20%).
	var a [][]int32
	var st []coord.VersionedPartition
	for p := range 20 {
		preferred, other := int32(1), int32(2)
		if p >= 10 {
			preferred, other = 2, 1
		}
		a = append(a, []int32{preferred, other})
		leader := preferred
		if p == 0 || p == 10 || p == 11 {
			leader = other
		}
		st = append(st, coord.VersionedPartition{PartitionState: meta.PartitionState{Leader: leader, ISR: []int32{1, 2}}, ModRevision: 1})
	}
	s.Topics["t"] = coord.VersionedTopic{Topic: meta.Topic{Name: "t", Partitions: a}}
	s.Partitions["t"] = st
	got := fmt.Sprint(imbalancedPartitions(s, 10))
	if want := "[{t 10} {t 11}]"; got != want {
		t.Fatalf("got %s, want %s (broker 1 at 10%% is within the threshold)", got, want)
	}
}

// Requested elections never pick a broker recovering from an unclean
// shutdown.
func TestPlanElectionSkipsRecovering(t *testing.T) {
	s := snapshotFlags([]int32{1, 2, 3}, meta.PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1}}, nil, []int32{1}, 1, 2, 3)
	if _, err := PlanElection(s, Preferred, "t", 0); !errors.Is(err, ErrPreferredLeaderNotAvailable) {
		t.Fatalf("preferred leader recovering: %v, want ErrPreferredLeaderNotAvailable", err)
	}
	s = snapshotFlags([]int32{1, 2, 3}, meta.PartitionState{Leader: -1, LeaderEpoch: 3, ISR: []int32{1}}, nil, []int32{1, 2}, 1, 2, 3)
	c, err := PlanElection(s, Unclean, "t", 0)
	if err != nil || c.State.Leader != 3 || fmt.Sprint(c.State.ISR) != "[3]" {
		t.Fatalf("unclean with 1 and 2 recovering: %+v, %v; want 3 elected alone", c.State, err)
	}
	s = snapshotFlags([]int32{1, 2, 3}, meta.PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 3}}, nil, []int32{1}, 1, 2, 3)
	c, err = PlanElection(s, Unclean, "t", 0)
	if err != nil || c.State.Leader != 3 || c.State.LeaderEpoch != 4 || fmt.Sprint(c.State.ISR) != "[3]" {
		t.Fatalf("unclean with a recovering leader: %+v, %v; want 3 elected from the ISR", c.State, err)
	}
}
