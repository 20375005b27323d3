package broker

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// inParallel runs every call, never more than limit at once, and raises a
// call's panic in the caller (where a request's recovery catches it) only
// after the other calls have returned.
func TestInParallel(t *testing.T) {
	const n, limit = 200, 7
	inParallel(0, limit, func(i int) { t.Fatalf("call %d of none", i) })
	var running, peak, done atomic.Int64
	inParallel(n, limit, func(i int) {
		r := running.Add(1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		running.Add(-1)
		done.Add(1)
	})
	if done.Load() != n || peak.Load() > limit {
		t.Fatalf("%d calls of %d, at most %d at once (limit %d)", done.Load(), n, peak.Load(), limit)
	}

	// The raised panic carries the stack of the call that panicked,
	// down to the line of its panic.
	done.Store(0)
	var recovered any
	var panicLine string
	func() {
		defer func() { recovered = recover() }()
		inParallel(n, limit, func(i int) {
			done.Add(1)
			if i == 3 {
				_, file, line, _ := runtime.Caller(0)
				panicLine = fmt.Sprintf("%s:%d", file, line+2)
				panic("call 3")
			}
		})
	}()
	if p, ok := recovered.(callPanic); !ok || p.value != "call 3" || !strings.Contains(string(p.stack), panicLine) ||
		!strings.Contains(p.String(), "call 3") || done.Load() != n {
		t.Fatalf("recovered %v after %d calls; want the panic of call 3, with its stack at %s, after all %d", recovered, done.Load(), panicLine, n)
	}

	// The last call's panic too is raised once the others have
	// returned, whichever goroutine made it (the caller makes calls
	// too).
	done.Store(0)
	recovered = nil
	func() {
		defer func() { recovered = recover() }()
		inParallel(n, limit, func(i int) {
			if i == n-1 {
				panic("the last call")
			}
			done.Add(1)
		})
	}()
	if p, ok := recovered.(callPanic); !ok || p.value != "the last call" || done.Load() != n-1 {
		t.Fatalf("recovered %v after %d calls; want the last call's panic after the other %d", recovered, done.Load(), n-1)
	}
}
