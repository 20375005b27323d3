package broker

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// maxParallelSyncs bounds the partitions whose logs one request (a Produce,
// a follower's fetch response, a housekeeping round) syncs at once. Each
// partition is a file of its own, and fsyncs issued one after another
// each wait for the device (a cache flush apiece); issued together, the
// kernel writes their pages in one stream and the device merges the
// flushes. On this project's test machine (one virtual SSD), 2,000 files
// of 64 KiB sync in about 2 s one by one, 0.2–0.3 s 32 to 128 at a time,
// and slower again at 512 (docs/performance.md, "Many partitions").
const maxParallelSyncs = 32

// inParallel calls fn(i) for each i in [0, n), at most limit at once, and
// returns once every call has. min(n, limit) goroutines take the calls in
// turn, the caller's one of them, so a request of 2,000 partitions starts
// limit-1 goroutines, not 2,000. A call that panics does not take the
// process down from its own goroutine: the first panic is raised again in
// the caller's once the others have returned, as a callPanic holding the
// panicking goroutine's stack, where the request's recovery (a
// connection's) catches and logs it as it would a call made there.
func inParallel(n, limit int, fn func(i int)) {
	if n <= 1 || limit <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked any
	)
	call := func(i int) {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if panicked == nil {
					panicked = callPanic{value: r, stack: debug.Stack()}
				}
				mu.Unlock()
			}
		}()
		fn(i)
	}
	work := func() {
		for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
			call(i)
		}
	}
	workers := min(n, limit)
	wg.Add(workers - 1)
	for range workers - 1 {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}

// callPanic is a panic of an inParallel call, raised again in the caller:
// the value the call panicked with, and the stack of the goroutine it
// panicked on (the caller's own stack, which a recovery logs, shows only
// the raise).
type callPanic struct {
	value any
	stack []byte
}

func (p callPanic) String() string {
	return fmt.Sprintf("%v\n\nthe panicking call's goroutine:\n%s", p.value, p.stack)
}
