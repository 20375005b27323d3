package records

import (
	"errors"
	"sync"
	"testing"
)

// testBudget is a MemoryBudget of limit bytes that records its peak.
type testBudget struct {
	mu          sync.Mutex
	limit, used int64
	peak        int64
	acquired    int
}

func (b *testBudget) TryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	b.acquired++
	return true
}

func (b *testBudget) Release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.used < 0 {
		panic("released more than acquired")
	}
}

// TestValidateMemoryBudget: decompression during validation takes its
// output from the budget and gives it all back; a batch that compresses
// better than 4:1 is retried with a larger cap; a batch that finds no
// room still validates (outside the budget, one at a time); the cap still
// applies. And a batch of zeros, compressing far better than 4:1, is
// retried with a larger cap.
func TestValidateMemoryBudget(t *testing.T) {
	raw := encodeRecords(recs(512, 4<<10))
	for _, c := range allCodecs[1:] { // compressed ones
		t.Run(c.name, func(t *testing.T) {
			b := build(t, batchSpec{records: recs(512, 4<<10), codec: c.codec})
			lim := testLimits()
			lim.MaxMessageBytes = 8 << 20

			budget := &testBudget{limit: 64 << 20}
			lim.Memory = budget
			res, err := Validate(b, lim)
			if err != nil {
				t.Fatalf("validate within a budget: %v", err)
			}
			if res.UncompressedBytes != len(raw) {
				t.Fatalf("uncompressed %d bytes, want %d", res.UncompressedBytes, len(raw))
			}
			if budget.used != 0 || budget.acquired == 0 {
				t.Fatalf("budget: %d bytes still used after %d acquisitions, want 0 after at least one", budget.used, budget.acquired)
			}
			if budget.peak > 4*int64(len(raw)) {
				t.Errorf("budget peak %d bytes for %d decompressed, want at most 4x", budget.peak, len(raw))
			}

			// No room at all: validated anyway, nothing taken.
			full := &testBudget{limit: 0}
			lim.Memory = full
			if _, err := Validate(b, lim); err != nil {
				t.Fatalf("validate with a full budget: %v", err)
			}
			if full.used != 0 {
				t.Fatalf("full budget: %d bytes used", full.used)
			}

			// The cap applies whatever the budget.
			lim.Memory = budget
			lim.MaxDecompressedBytes = int64(len(raw) - 1)
			if _, err := Validate(b, lim); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("validate above the cap: %v, want ErrDecompressedTooLarge", err)
			}
			if budget.used != 0 {
				t.Fatalf("budget: %d bytes still used after a failed validation", budget.used)
			}
		})
	}

	t.Run("retry", func(t *testing.T) {
		b := build(t, batchSpec{rawRecords: make([]byte, 4<<20), records: recs(1, 1), count: 1, codec: codecGzip})
		budget := &testBudget{limit: 64 << 20}
		lim := testLimits()
		lim.MaxMessageBytes = 8 << 20
		lim.Memory = budget
		_, err := Validate(b, lim)
		// The records are zeros, not records: what matters is that
		// decompression got past its first try.
		if errors.Is(err, ErrDecompressedTooLarge) {
			t.Fatalf("validate: %v", err)
		}
		if budget.acquired < 2 || budget.used != 0 {
			t.Fatalf("%d acquisitions, %d bytes left; want a retry and nothing left", budget.acquired, budget.used)
		}
	})
}

// A decoder that panics gives back what its decompression held, the
// budget's bytes or the one over-budget slot (final review of issue 16:
// one panic left the slot taken, and every later large decompression then
// failed with ErrDecompressBusy).
func TestDecompressPanicReleases(t *testing.T) {
	defer func(f func(int, []byte, []byte, int) ([]byte, error)) { decompressFunc = f }(decompressFunc)
	decompressFunc = func(int, []byte, []byte, int) ([]byte, error) { panic("decoder bug") }
	src := make([]byte, 128<<10) // a try of 4× over overBudgetSmall: the over-budget path takes the slot
	for _, c := range []struct {
		name   string
		budget *testBudget
	}{{"within the budget", &testBudget{limit: 64 << 20}}, {"over the budget", &testBudget{limit: 0}}} {
		t.Run(c.name, func(t *testing.T) {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the decoder's panic did not reach the caller")
					}
				}()
				decompressWithin(c.budget, codecGzip, src, &buffer{}, 1<<30)
			}()
			if c.budget.used != 0 {
				t.Fatalf("%d bytes of the budget still held after the panic", c.budget.used)
			}
			select {
			case overBudget <- struct{}{}:
				<-overBudget
			default:
				t.Fatal("the over-budget slot is still held after the panic")
			}
		})
	}
}
