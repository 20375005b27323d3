package main

import (
	"context"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGroupStartTake(t *testing.T) {
	gs := &groupStart{pending: map[string]map[int32]kgo.EpochOffset{
		"t": {0: {Epoch: -1, Offset: 5}, 1: {Epoch: -1, Offset: 7}, 2: {Epoch: -1, Offset: 9}},
		"u": {0: {Epoch: -1, Offset: 1}},
	}}
	// Partition t/2 lost in a rebalance: its start must not be committed.
	gs.forget(context.Background(), nil, map[string][]int32{"t": {2}})
	// Partition t/1 printed records, which commit a later offset.
	got := gs.take(map[string]map[int32]bool{"t": {1: true}})
	want := map[string]map[int32]kgo.EpochOffset{
		"t": {0: {Epoch: -1, Offset: 5}},
		"u": {0: {Epoch: -1, Offset: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("take = %v, want %v", got, want)
	}
	// Taken offsets are committed once only.
	if again := gs.take(nil); again != nil {
		t.Errorf("second take = %v, want nil", again)
	}
}

func TestGroupStartMarkAssigned(t *testing.T) {
	var gs groupStart
	gs.markAssigned()
	first := gs.assignedAt.Load()
	if first == 0 {
		t.Fatal("markAssigned did not record a time")
	}
	gs.markAssigned()
	if got := gs.assignedAt.Load(); got != first {
		t.Errorf("a later assignment moved the idle clock: %d, want %d", got, first)
	}
}
