package broker

import "sync"

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
// returns once every call has. A call that panics does not take the
// process down from its own goroutine: the panic is raised again in the
// caller's once the others have returned, where the request's recovery
// (a connection's) catches it as it would have caught a call made there.
func inParallel(n, limit int, fn func(i int)) {
	if n == 1 || limit <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		panicked any
	)
	slots := make(chan struct{}, limit)
	call := func(i int) {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if panicked == nil {
					panicked = r
				}
				mu.Unlock()
			}
			<-slots
			wg.Done()
		}()
		fn(i)
	}
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		if i == n-1 {
			// The last on the caller's goroutine, which would only wait:
			// one goroutine fewer to start and wake.
			call(i)
			break
		}
		go call(i)
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
