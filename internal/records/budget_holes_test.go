package records

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// With the budget full, every compressed batch of every producer once
// decompressed under one process-wide lock: a small batch waited behind
// large ones (here 4 producers' 60 MiB gzip batches of zeros, near the 64
// MiB cap). Small ones now run at once; large ones wait for their turn at
// most overBudgetWait, then fail with a retriable error.
func TestBudgetSmallBatchNotBehindLarge(t *testing.T) {
	big := build(t, batchSpec{rawRecords: make([]byte, 60<<20), records: recs(1, 1), count: 1, codec: codecGzip})
	small := build(t, batchSpec{records: recs(4, 100), codec: codecGzip})
	lim := testLimits()
	lim.MaxMessageBytes = 8 << 20
	lim.Memory = &testBudget{limit: 0} // full
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); Validate(big, lim) }()
	}
	time.Sleep(20 * time.Millisecond)
	t0 := time.Now()
	if _, err := Validate(small, lim); err != nil {
		t.Fatal(err)
	}
	behind := time.Since(t0)
	wg.Wait()
	if behind > 100*time.Millisecond {
		t.Errorf("a small compressed batch took %v to validate beside large ones while the budget is full", behind)
	}
}

// A large batch that finds the budget full waits for its turn outside it
// at most overBudgetWait, then fails with a retriable error.
func TestBudgetLargeBatchWaitsBounded(t *testing.T) {
	big := build(t, batchSpec{rawRecords: make([]byte, 4<<20), records: recs(1, 1), count: 1, codec: codecGzip})
	lim := testLimits()
	lim.MaxMessageBytes = 8 << 20
	lim.Memory = &testBudget{limit: 0} // full
	defer func(d time.Duration) { overBudgetWait = d }(overBudgetWait)
	overBudgetWait = 100 * time.Millisecond
	overBudget <- struct{}{} // someone decompresses for ever
	_, err := Validate(big, lim)
	<-overBudget
	if !errors.Is(err, ErrDecompressBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("large batch while another holds the over-budget turn: %v, want ErrDecompressBusy", err)
	}
	// (The records are zeros: decompressed, they do not parse.)
	if _, err := Validate(big, lim); errors.Is(err, ErrDecompressBusy) || !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("once the turn is free: %v, want the records decompressed (and found malformed)", err)
	}
}
