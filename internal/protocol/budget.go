package protocol

import (
	"context"
	"sync"
)

// Budget is the server-wide memory budget of the request path
// (queued.max.request.bytes): the bytes of request frames being read or
// waiting for their response, the record bytes that handlers reserve for
// responses (ReserveResponse), and whatever else a handler lets take from
// it, such as decompression buffers during produce validation.
//
// Only a connection's reader ever waits on it, and only while growing a
// frame it is reading; everything else takes what is free (TryAcquire,
// Grant) or charges unconditionally (Charge), so nothing waits while
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
	// waiters is the number of readers waiting in acquire.
	waiters int
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
	// overdraft is the reader that may exceed the budget until its frame
	// is read (see acquire); nil if none.
	overdraft *conn
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

// Grant takes up to n bytes, as many as are free, and returns how many.
func (b *Budget) Grant(n int64) int64 {
	if b == nil {
		return n
	}
	if n <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fitsLocked(n) {
		n = max(b.limit-b.used, 0)
	}
	b.used += n
	return n
}

// Charge takes n bytes whether or not they fit: for memory that is already
// allocated, or that must be for progress (the first batch of a fetch).
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
func (b *Budget) Release(n int64) { b.release(n, 0) }

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

// release returns n bytes, small of them charged by chargeSmall.
func (b *Budget) release(n, small int64) {
	if b == nil {
		return
	}
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.small -= small
	b.broadcastLocked()
	b.mu.Unlock()
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
// waits for it. When every byte in use
// is stuck so, nothing might be released: one waiting reader then
// becomes the overdraft reader, which takes the rest of its frame without
// waiting until it calls frameDone, and the others go on waiting. So the
// budget is exceeded by at most one frame, and only when nothing else is
// sure to move.
func (b *Budget) acquire(ctx context.Context, n, held int64, reader *conn) error {
	return b.acquireFrame(ctx, n, held, reader, true)
}

// acquireFrame is acquire for a frame that is a Produce's (bulk) or not.
func (b *Budget) acquireFrame(ctx context.Context, n, held int64, reader *conn, bulk bool) error {
	if b == nil || n <= 0 {
		return nil
	}
	b.mu.Lock()
	if b.fitsLocked(n) || b.overdraft == reader {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	b.waiting += held
	b.waiters++
	b.broadcastLocked() // others may now be the only ones able to move
	defer func() {
		b.waiting -= held
		b.waiters--
		b.mu.Unlock()
	}()
	for {
		stuck := b.waiting + b.small
		if !bulk {
			stuck += b.parked
		}
		if b.overdraft == nil && b.used <= stuck {
			b.overdraft = reader
		}
		if b.fitsLocked(n) || b.overdraft == reader {
			b.used += n
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			b.mu.Lock()
			return ctx.Err()
		}
		b.mu.Lock()
	}
}

// contended reports whether a reader is waiting for room.
func (b *Budget) contended() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters > 0
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
