package protocol

import (
	"context"
	"sync"
	"time"
)

// Budget is the server-wide memory budget of the request path
// (queued.max.request.bytes): the bytes of request frames being read or
// waiting for their response, encoded responses waiting to be written, and
// whatever else a handler lets take from it, such as decompression buffers
// during produce validation.
//
// Only a connection's reader ever waits on it, and only while growing a
// frame it is reading; everything else takes what is free (TryAcquire) or
// charges unconditionally (Charge), so nothing waits while
// holding bytes that a waiter needs, except readers with partial frames.
// Readers wait for bytes to be released, which the write goroutines do as
// responses are written; should every byte in use belong to the partial
// frames of readers that are themselves waiting, or to small frames, one
// of them finishes its frame over the budget (see acquire) rather than all
// waiting for ever.
//
// A Budget with a limit of 0 or less counts but never refuses; a nil
// *Budget neither counts nor refuses.
type Budget struct {
	limit int64

	mu sync.Mutex
	// used is the bytes taken and not yet released.
	used int64
	// waiting is the bytes of partial frames held by readers waiting in
	// Acquire.
	waiting int64
	// waiters are the readers waiting in acquire.
	waiters map[*conn]*waiter
	// small is the bytes of whole request frames of up to smallFrame
	// (chargeSmall) not yet released: requests handled or parked, whose
	// bytes a waiting reader cannot count on being released soon (a
	// long poll, a client that reads no responses).
	small int64
	// parked is the bytes of large Produce frames whose requests wait in
	// a Later (an acks=all produce waiting for its followers): they are
	// released when the wait ends, which may take a follower's fetch
	// that is itself waiting for room. Other requests that wait (a
	// SyncGroup) are not counted: a client can make them wait as long as
	// it likes.
	parked int64
	// changed is closed, and replaced, when used goes down, a reader
	// starts waiting or the overdraft ends.
	changed chan struct{}
	// overdrawn is the bytes taken beyond the limit by overdraft readers
	// and not yet released (see conn.overdrawn).
	overdrawn int64
	// overdraft is the reader that may exceed the budget until its frame
	// is read (see acquire), since overdraftAt; nil if none.
	overdraft   *conn
	overdraftAt time.Time
}

// NewBudget returns a budget of limit bytes; limit <= 0 is unlimited.
func NewBudget(limit int64) *Budget {
	return &Budget{limit: limit, changed: make(chan struct{})}
}

// Limit returns the budget's limit (<= 0: unlimited).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Used returns the bytes taken and not yet released.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// fitsLocked reports whether n more bytes fit, or would fit were the
// budget otherwise empty (a single item larger than the whole budget
// passes when nothing else is in use).
func (b *Budget) fitsLocked(n int64) bool {
	return b.limit <= 0 || b.used+n <= b.limit || b.used == 0
}

func (b *Budget) broadcastLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// TryAcquire takes n bytes if they fit, and reports whether it did.
func (b *Budget) TryAcquire(n int64) bool {
	if b == nil {
		return true
	}
	if n <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fitsLocked(n) {
		return false
	}
	b.used += n
	return true
}

// Charge takes n bytes whether or not they fit: for memory that is already
// allocated (an encoded response), or that must be for progress.
func (b *Budget) Charge(n int64) {
	if b == nil {
		return
	}
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// Release returns n bytes.
func (b *Budget) Release(n int64) { b.releaseFrom(nil, n, 0) }

// chargeSmall charges the n bytes of a small request frame (never more
// than smallFrame): see small.
func (b *Budget) chargeSmall(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.used += n
	b.small += n
	b.mu.Unlock()
}

// park counts n bytes as parked (n < 0: no longer).
func (b *Budget) park(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.parked += n
	if n > 0 {
		b.broadcastLocked() // waiting readers may now be the only ones able to move
	}
	b.mu.Unlock()
}

// releaseFrom returns n bytes of reader's (nil: a handler's), small of
// them charged by chargeSmall.
func (b *Budget) releaseFrom(reader *conn, n, small int64) {
	if b == nil {
		return
	}
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.small -= small
	if reader != nil && reader.overdrawn > 0 {
		r := min(reader.overdrawn, n)
		reader.overdrawn -= r
		b.overdrawn -= r
	}
	b.broadcastLocked()
	b.mu.Unlock()
}

// overdraftPatience is how long a reader may wait for room before the
// overdraft may be given although bytes in use are not all stuck (see
// acquire): bytes that will be released, but not soon (the responses of a
// client that reads slowly, the partial frame of one that sends slowly),
// must not keep a small frame waiting behind them.
const overdraftPatience = time.Second

// waiter is a reader waiting in acquire.
type waiter struct {
	// left is the bytes of its frame not yet taken, this step's
	// included: the overdraft goes to the waiter with the least left.
	left int64
	// since is when it began to wait.
	since time.Time
	// bulk: a Produce frame (see acquire).
	bulk bool
}

// acquire takes n bytes for the frame that reader is reading, waiting
// until they fit or ctx is done. held is the bytes of that frame already
// taken: while the reader waits they count as stuck. Small frames (see
// small) count as stuck too: a parked long poll or a client that reads no
// responses holds them for as long as it likes; and, for a reader of
// anything but Produce (bulk), so do parked Produce frames (see parked),
// whose wait may need a follower's fetch that is itself waiting here.
// Produce frames do not get past parked ones: were they let through, the
// produce requests parked at once would be bounded by nothing; and a
// frame let through is not counted as stuck once read, so that the next
// waits for it.
//
// When every byte in use is stuck so, nothing might be released: one
// waiting reader then becomes the overdraft reader, which takes the rest
// of its frame without waiting until it calls frameDone, and the others
// go on waiting. So does one when a reader has waited overdraftPatience
// and what earlier overdraft readers took beyond the limit has been
// released: bytes that will be released but not soon (responses that a
// client reads slowly, partial frames) must not keep others waiting. Of
// the waiting readers, the overdraft goes to the one with the fewest
// bytes of its frame left to read (a normal 1 MB produce, not a
// client's 100 MB frame that trickles in), each second it has waited
// counting as 1 MiB fewer (overdraftAging); and readFrame closes the
// connection of an overdraft reader that does not finish its frame
// within StallTimeout while others wait. So the budget is exceeded by at
// most one frame, besides what handlers are charged beyond it (Charge),
// and a waiting reader gets its turn.
//
// size is the frame's size; bulk tells whether it is a Produce's.
func (b *Budget) acquire(ctx context.Context, n, held, size int64, reader *conn, bulk bool) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	if b.fitsLocked(n) || b.overdraft == reader {
		b.takeLocked(reader, n)
		b.mu.Unlock()
		return nil
	}
	if b.waiters == nil {
		b.waiters = make(map[*conn]*waiter)
	}
	w := &waiter{left: size - held, since: time.Now(), bulk: bulk}
	b.waiters[reader] = w
	b.waiting += held
	b.broadcastLocked() // others may now be the only ones able to move
	var timer *time.Timer
	defer func() {
		b.waiting -= held
		delete(b.waiters, reader)
		b.mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := time.Now()
		if b.overdraft == nil {
			if r := b.pickOverdraftLocked(now); r != nil {
				b.overdraft, b.overdraftAt = r, now
				if r != reader {
					b.broadcastLocked()
				}
			}
		}
		if b.fitsLocked(n) || b.overdraft == reader {
			b.takeLocked(reader, n)
			return nil
		}
		// Wake when this reader's patience runs out, if it has not.
		var patience <-chan time.Time
		if d := w.since.Add(overdraftPatience).Sub(now); d > 0 {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			patience = timer.C
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-patience:
		case <-ctx.Done():
			b.mu.Lock()
			return ctx.Err()
		}
		b.mu.Lock()
	}
}

// newFrame starts the count of what reader takes beyond the limit for the
// frame it reads next (conn.frameOverdrawn).
func (b *Budget) newFrame(reader *conn) {
	if b == nil {
		return
	}
	b.mu.Lock()
	reader.frameOverdrawn = 0
	b.mu.Unlock()
}

// forgiveFrameOverdraft stops counting as overdrawn what reader took beyond
// the limit for the frame it read last: its request is parked for as long
// as its client likes. What it took for other frames (a parked produce's)
// stays counted.
func (b *Budget) forgiveFrameOverdraft(reader *conn) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if f := min(reader.frameOverdrawn, reader.overdrawn); f > 0 {
		b.overdrawn -= f
		reader.overdrawn -= f
		reader.frameOverdrawn = 0
		b.broadcastLocked()
	}
}

// takeLocked takes n bytes for reader's frame, counting what goes beyond
// the limit as overdrawn.
func (b *Budget) takeLocked(reader *conn, n int64) {
	over := max(b.used+n-b.limit, 0) - max(b.used-b.limit, 0)
	b.used += n
	if reader != nil && b.limit > 0 && over > 0 {
		reader.overdrawn += over
		reader.frameOverdrawn += over
		b.overdrawn += over
	}
}

// pickOverdraftLocked returns the waiting reader that gets the overdraft
// now, or nil if none does (see acquire).
func (b *Budget) pickOverdraftLocked(now time.Time) *conn {
	patient := false
	if b.overdrawn == 0 {
		for _, w := range b.waiters {
			if now.Sub(w.since) >= overdraftPatience {
				patient = true
				break
			}
		}
	}
	stuck := b.waiting + b.small
	var best *conn
	var bestW *waiter
	for r, w := range b.waiters {
		eligible := patient || b.used <= stuck
		if !eligible && !w.bulk {
			eligible = b.used <= stuck+b.parked
		}
		if !eligible {
			continue
		}
		if bestW == nil || w.priority(now) < bestW.priority(now) || w.priority(now) == bestW.priority(now) && w.since.Before(bestW.since) {
			best, bestW = r, w
		}
	}
	return best
}

// overdraftAging is how much waiting counts for in the overdraft's pick:
// each second waited counts as this many bytes fewer left, so that a
// stream of small frames cannot keep a larger one waiting for ever, nor
// can a 100 MB frame be passed over for long by normal ones.
const overdraftAging = 1 << 20

// priority orders waiters for the overdraft: the lowest goes first.
func (w *waiter) priority(now time.Time) int64 {
	return w.left - int64(now.Sub(w.since).Seconds()*overdraftAging)
}

// Waiting returns the number of readers waiting for room.
func (b *Budget) Waiting() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// overdraftSince reports when reader got the overdraft, if it holds it.
func (b *Budget) overdraftSince(reader *conn) (time.Time, bool) {
	if b == nil {
		return time.Time{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.overdraft != reader {
		return time.Time{}, false
	}
	return b.overdraftAt, true
}

// contended reports whether a reader is waiting for room.
func (b *Budget) contended() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters) > 0
}

// frameDone ends reader's overdraft, if it has it, once its frame is read
// (or reading it failed).
func (b *Budget) frameDone(reader *conn) {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.overdraft == reader {
		b.overdraft = nil
		b.broadcastLocked()
	}
	b.mu.Unlock()
}
