package coord

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// Blocks allocated concurrently from several clients never overlap, and
// together tile [0, total) with no gap.
func TestAllocateProducerIDsConcurrent(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	clients := []*Client{connect(t, eps, cluster), connect(t, eps, cluster), connect(t, eps, cluster)}

	type block struct{ first, size int64 }
	var (
		mu     sync.Mutex
		blocks []block
		wg     sync.WaitGroup
	)
	for _, c := range clients {
		for range 3 {
			wg.Go(func() {
				for range 8 {
					size := 1 + rand.Int64N(1000)
					first, err := c.AllocateProducerIDs(testCtx(t), size)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					blocks = append(blocks, block{first, size})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	slices.SortFunc(blocks, func(a, b block) int { return int(a.first - b.first) })
	next := int64(0)
	for _, b := range blocks {
		if b.first != next {
			t.Fatalf("block [%d, %d) follows %d: overlap or gap", b.first, b.first+b.size, next)
		}
		next = b.first + b.size
	}
	// The next allocation continues after all of them.
	first, err := clients[0].AllocateProducerIDs(testCtx(t), 1)
	if err != nil || first != next {
		t.Fatalf("next block starts at %d (%v), want %d", first, err, next)
	}
	_, err = clients[0].AllocateProducerIDs(testCtx(t), 0)
	mustIs(t, err, ErrInvalid)
}
