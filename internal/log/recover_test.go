package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
)

// editFile rewrites a file through the FS (and syncs it), as a disk fault
// or a crash might have left it.
func editFile(t *testing.T, fsys FS, name string, edit func([]byte) []byte) {
	t.Helper()
	b, err := ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(edit(b)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// lastSegment returns the base offset of the last segment file in dir.
func lastSegment(t *testing.T, fsys FS, dir string) int64 {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := int64(-1)
	for _, n := range names {
		if base, ok := parseOffsetFileName(n, logSuffix); ok {
			last = max(last, base)
		}
	}
	return last
}

// checkLogMatches checks that l holds exactly want: a full read, a read of
// every offset, and the LEO.
func checkLogMatches(t *testing.T, l *Log, want [][]byte) {
	t.Helper()
	if got := readAllBatches(t, l); !bytes.Equal(got, concat(want...)) {
		t.Fatalf("log holds %d bytes (%d batches), want %d bytes (%d batches)",
			len(got), len(splitBatches(t, got)), len(concat(want...)), len(want))
	}
	leo := l.StartOffset()
	for _, b := range want {
		h, _ := ParseBatchHeader(b)
		for off := h.BaseOffset; off <= h.LastOffset(); off++ {
			got, err := l.Read(off, h.NextOffset(), 1, true)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("Read(%d): %v, %d bytes, want the batch at %d", off, err, len(got), h.BaseOffset)
			}
		}
		leo = h.NextOffset()
	}
	if got := l.EndOffset(); got != leo {
		t.Fatalf("EndOffset = %d, want %d", got, leo)
	}
}

func TestRecoverDamagedSegment(t *testing.T) {
	tests := []struct {
		name string
		// damage edits the file of the last segment holding batches; it
		// returns how many of the batches stored there survive.
		damage   func(seg []byte, sizes []int) ([]byte, int)
		unclean  bool // also drop the recovery point (damage below it is not looked for)
		keepTail bool // the damage is harmless
	}{
		{"flip a byte in the last batch", func(b []byte, sizes []int) ([]byte, int) {
			b[len(b)-sizes[len(sizes)-1]/2] ^= 0x40
			return b, len(sizes) - 1
		}, false, false},
		{"tail cut mid-batch", func(b []byte, sizes []int) ([]byte, int) {
			return b[:len(b)-sizes[len(sizes)-1]/3], len(sizes) - 1
		}, false, false},
		{"tail cut inside the header", func(b []byte, sizes []int) ([]byte, int) {
			return b[:len(b)-sizes[len(sizes)-1]+20], len(sizes) - 1
		}, false, false},
		{"zeros appended", func(b []byte, sizes []int) ([]byte, int) {
			return append(b, make([]byte, 4096)...), len(sizes)
		}, false, false},
		{"garbage appended", func(b []byte, sizes []int) ([]byte, int) {
			return append(b, bytes.Repeat([]byte{0xde, 0xad}, 700)...), len(sizes)
		}, false, false},
		{"length field beyond the file", func(b []byte, sizes []int) ([]byte, int) {
			at := len(b) - sizes[len(sizes)-1]
			b[at+8], b[at+9] = 0x7f, 0xff
			return b, len(sizes) - 1
		}, false, false},
		{"first batch of the segment corrupt", func(b []byte, sizes []int) ([]byte, int) {
			b[30] ^= 1
			return b, 0
		}, true, false},
	}
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				dir := env.dir + "-" + tt.name
				l := mustOpen(t, dir, cfg)
				batches := appendN(t, l, 12, 3, 40, cfg.Now().UnixMilli(), 2)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				base := lastSegment(t, env.fs, dir)
				// The batches stored in that segment.
				var inSeg []int
				first := -1
				for i, b := range batches {
					h, _ := ParseBatchHeader(b)
					if h.BaseOffset >= base {
						if first < 0 {
							first = i
						}
						inSeg = append(inSeg, len(b))
					}
				}
				var survive int
				editFile(t, env.fs, segmentFileName(dir, base, logSuffix), func(b []byte) []byte {
					var out []byte
					out, survive = tt.damage(b, inSeg)
					return out
				})
				if tt.unclean {
					if err := env.fs.Remove(join(dir, recoveryPointFile)); err != nil {
						t.Fatal(err)
					}
				}
				l = mustOpen(t, dir, cfg)
				want := batches[:first+survive]
				checkLogMatches(t, l, want)
				// The log goes on: appends land after the cut, in the next epoch.
				b := newBatch(2, 10, cfg.Now().UnixMilli()).encode()
				leo := l.EndOffset()
				mustAppend(t, l, b, 3)
				want = append(want[:len(want):len(want)], stored(b, leo, 3))
				checkLogMatches(t, l, want)
				wantEpoch, wantEnd := int32(2), leo
				if leo == 0 {
					// No batch of epoch 2 is left: below the earliest epoch, Kafka
					// answers the epoch asked for and the earliest epoch's start.
					wantEpoch, wantEnd = 2, 0
				}
				if e, off := l.EndOffsetForEpoch(2); e != wantEpoch || off != wantEnd {
					t.Fatalf("EndOffsetForEpoch(2) = %d, %d; want %d, %d", e, off, wantEpoch, wantEnd)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, dir, cfg)
				defer l.Close()
				checkLogMatches(t, l, want)
			})
		}
	})
}

func TestRecoverDamagedIndexes(t *testing.T) {
	tests := []struct {
		name   string
		suffix string
		damage func([]byte) []byte
	}{
		{"index size not a multiple", indexSuffix, func(b []byte) []byte { return append(b, 1, 2, 3) }},
		{"index not monotonic", indexSuffix, func(b []byte) []byte {
			if len(b) >= 16 {
				copy(b[8:16], b[0:8])
			}
			return b
		}},
		{"index position beyond the segment", indexSuffix, func(b []byte) []byte {
			return append(b, 0, 0, 0xff, 0xff, 0x7f, 0, 0, 0)
		}},
		{"index entry points into a batch", indexSuffix, func(b []byte) []byte {
			if len(b) >= 8 {
				b[len(b)-1]++
			}
			return b
		}},
		{"index emptied", indexSuffix, func(b []byte) []byte { return nil }},
		{"time index garbage", timeIndexSuffix, func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xff}, 12)...) }},
		{"time index not monotonic", timeIndexSuffix, func(b []byte) []byte {
			return append(b, make([]byte, 12)...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mk := range fileSystems(t) {
				env := mk(t)
				cfg := testConfig(env.fs, newFakeClock())
				cfg.IndexIntervalBytes = 1 // an entry per batch
				cfg.SegmentBytes = 4096
				l := mustOpen(t, env.dir, cfg)
				now := cfg.Now().UnixMilli()
				batches := appendN(t, l, 60, 2, 50, now, 0)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				// Damage every segment's index: sealed ones and the active one.
				names, _ := env.fs.ReadDir(env.dir)
				for _, n := range names {
					if _, ok := parseOffsetFileName(n, tt.suffix); ok {
						editFile(t, env.fs, join(env.dir, n), tt.damage)
					}
				}
				l = mustOpen(t, env.dir, cfg)
				checkLogMatches(t, l, batches)
				for i := range batches {
					ts := now + int64(i)*10
					got, ok, err := l.BatchAtTimestamp(ts)
					if err != nil || !ok || !bytes.Equal(got, batches[i]) {
						t.Fatalf("%s: BatchAtTimestamp(%d): %v, %v", env.name, ts, ok, err)
					}
				}
				if ts, off := l.MaxTimestamp(); ts != now+591 || off != 119 {
					t.Fatalf("%s: MaxTimestamp = %d at %d", env.name, ts, off)
				}
				l.Close()
			}
		})
	}
}

func TestRecoverDamagedCheckpoints(t *testing.T) {
	for _, name := range []string{recoveryPointFile, epochCheckpointFile, logStartOffsetFile, "00000000000000000012.snapshot"} {
		t.Run(name, func(t *testing.T) {
			m := NewMemFS(3)
			cfg := testConfig(m, newFakeClock())
			cfg.SegmentBytes = 600
			l := mustOpen(t, "/p", cfg)
			now := cfg.Now().UnixMilli()
			var batches [][]byte
			for i := range 6 {
				b := newBatch(2, 100, now).producer(9, 0, int32(2*i)).encode()
				batches = append(batches, stored(b, mustAppend(t, l, b, int32(i/2)).FirstOffset, int32(i/2)))
			}
			l.Close()
			editFile(t, m, join("/p", name), func(b []byte) []byte { return append(b[:len(b)/2], "junk"...) })
			l = mustOpen(t, "/p", cfg)
			defer l.Close()
			checkLogMatches(t, l, batches)
			if got := fmt.Sprint(l.Epochs()); got != "[{0 0} {1 4} {2 8}]" {
				t.Fatalf("Epochs = %s", got)
			}
			if p, ok := l.Producer(9); !ok || p.LastSequence != 11 || p.LastOffset != 11 {
				t.Fatalf("Producer = %+v, %v", p, ok)
			}
		})
	}
}

func TestCrashKeepsFlushedData(t *testing.T) {
	for _, segBytes := range segmentSizes {
		t.Run(fmt.Sprint(segBytes), func(t *testing.T) {
			for seed := range uint64(20) {
				m := NewMemFS(seed)
				cfg := testConfig(m, newFakeClock())
				cfg.SegmentBytes = segBytes
				l := mustOpen(t, "/p", cfg)
				var batches [][]byte
				add := func(n int) {
					for range n {
						b := newBatch(1+len(batches)%3, 30, 1).filled(byte(len(batches))).encode()
						batches = append(batches, stored(b, mustAppend(t, l, b, 0).FirstOffset, 0))
					}
				}
				add(5)
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
				flushed := len(batches)
				if got := l.FlushedOffset(); got != l.EndOffset() {
					t.Fatalf("FlushedOffset = %d after Flush, LEO %d", got, l.EndOffset())
				}
				add(4)
				m.Crash()
				l = mustOpen(t, "/p", cfg)
				got := splitBatches(t, readAllBatches(t, l))
				if len(got) < flushed {
					t.Fatalf("seed %d: %d batches after crash, %d were flushed", seed, len(got), flushed)
				}
				checkLogMatches(t, l, batches[:len(got)])
				batches = batches[:len(got)]
				add(2) // offsets continue
				checkLogMatches(t, l, batches)
				l.Close()
			}
		})
	}
}

func TestWriteAndSyncFailures(t *testing.T) {
	injected := errors.New("injected I/O error")
	tests := []struct {
		name   string
		inject func(m *MemFS)
		op     func(l *Log) error
	}{
		{"segment write", func(m *MemFS) { m.FailNextWrite(logSuffix, injected) }, func(l *Log) error {
			_, err := l.Append(newBatch(3, 100, 1).encode(), 0)
			return err
		}},
		{"index write", func(m *MemFS) { m.FailNextWrite(indexSuffix, injected) }, func(l *Log) error {
			_, err := l.Append(newBatch(3, 400, 1).encode(), 0)
			return err
		}},
		{"segment sync", func(m *MemFS) { m.FailNextSync(logSuffix, injected) }, func(l *Log) error {
			if _, err := l.Append(newBatch(3, 100, 1).encode(), 0); err != nil {
				return err
			}
			return l.Flush()
		}},
		{"directory sync", func(m *MemFS) { m.FailNextSync("/p", injected) }, func(l *Log) error {
			l.SetConfig(Config{SegmentBytes: 1, FS: l.fs, Logger: quietLogger})
			if _, err := l.Append(newBatch(3, 100, 1).encode(), 0); err != nil {
				return err
			}
			return l.Flush()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMemFS(7)
			cfg := testConfig(m, newFakeClock())
			l := mustOpen(t, "/p", cfg)
			batches := appendN(t, l, 4, 2, 300, 1, 0)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			flushed := l.FlushedOffset()
			tt.inject(m)
			if err := tt.op(l); !errors.Is(err, ErrFailed) || !errors.Is(err, injected) {
				t.Fatalf("op: got %v, want ErrFailed wrapping the injected error", err)
			}
			if got := l.FlushedOffset(); got != flushed {
				t.Fatalf("FlushedOffset = %d after failure, want %d", got, flushed)
			}
			// Everything else refuses to work now.
			if _, err := l.Append(newBatch(1, 1, 1).encode(), 0); !errors.Is(err, ErrFailed) {
				t.Fatalf("Append after failure: %v", err)
			}
			if _, err := l.Read(0, 100, 1000, true); !errors.Is(err, ErrFailed) {
				t.Fatalf("Read after failure: %v", err)
			}
			if err := l.Flush(); !errors.Is(err, ErrFailed) {
				t.Fatalf("Flush after failure: %v", err)
			}
			l.Close()
			m.Crash()
			l = mustOpen(t, "/p", cfg)
			defer l.Close()
			// The flushed batches are there; the failed append may or may
			// not have reached the disk whole.
			if got := readAllBatches(t, l); !bytes.HasPrefix(got, concat(batches...)) {
				t.Fatalf("after reopen the log does not start with the %d flushed batches", len(batches))
			}
		})
	}
}

func TestGroupCommit(t *testing.T) {
	m := NewMemFS(1)
	l := mustOpen(t, "/p", testConfig(m, newFakeClock()))
	defer l.Close()
	appendN(t, l, 3, 1, 10, 1, 0)
	before := m.Syncs(logSuffix)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := m.Syncs(logSuffix) - before; got != 1 {
		t.Fatalf("first Flush synced the segment %d times, want 1", got)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := m.Syncs(logSuffix) - before; got != 1 {
		t.Fatalf("Flush with nothing new synced again (%d syncs)", got)
	}

	// While a sync is in progress appends go on, and flushers that arrive
	// meanwhile share one more round.
	inSync, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	m.SetSyncHook(func(name string) {
		once.Do(func() { close(inSync); <-release })
	})
	appendN(t, l, 1, 1, 10, 1, 0)
	firstDone := make(chan error, 1)
	go func() { firstDone <- l.Flush() }()
	<-inSync
	appendN(t, l, 5, 1, 10, 1, 0) // would deadlock if the round held the append lock
	before = m.Syncs(logSuffix)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- l.Flush() }()
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The blocked round counts once; the eight late flushers need one more
	// round between them, or two if some were scheduled only after another
	// finished — never eight.
	if got := m.Syncs(logSuffix) - before; got < 1 || got > 3 {
		t.Fatalf("8 concurrent Flush calls made %d segment syncs, want 1 to 3", got)
	}
	if l.FlushedOffset() != l.EndOffset() {
		t.Fatalf("FlushedOffset %d, LEO %d", l.FlushedOffset(), l.EndOffset())
	}
}

// TestConcurrentUse runs appends, reads, flushes, retention and truncation
// from different goroutines; run it with -race. Readers check what they
// get: whole, CRC-valid batches, starting with the offset asked for.
func TestConcurrentUse(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			cfg := testConfig(env.fs, newFakeClock())
			cfg.SegmentBytes = 2048
			cfg.RetentionBytes = 16 << 10
			l := mustOpen(t, env.dir, cfg)
			defer l.Close()
			iterations := 300
			if testing.Short() {
				iterations = 100
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			run := func(f func(i int, rng *rand.Rand) error) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(len(errs)), 1))
					for i := range iterations {
						if err := f(i, rng); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			for range 2 {
				run(func(i int, rng *rand.Rand) error {
					_, err := l.Append(newBatch(1+rng.IntN(4), rng.IntN(200), int64(i)).encode(), 0)
					if err == nil {
						err = l.Flush()
					}
					return err
				})
			}
			for range 2 {
				run(func(i int, rng *rand.Rand) error {
					start, leo := l.StartOffset(), l.EndOffset()
					if leo <= start {
						return nil
					}
					off := start + rng.Int64N(leo-start)
					b, err := l.Read(off, leo, rng.IntN(3000), rng.IntN(2) == 0)
					if errors.Is(err, ErrOffsetOutOfRange) {
						return nil // retention or truncation moved on
					}
					if err != nil {
						return err
					}
					for first := true; len(b) > 0; first = false {
						h, err := ParseBatchHeader(b)
						if err == nil {
							err = VerifyCRC(b, &h)
						}
						if err != nil {
							return fmt.Errorf("Read(%d) returned a bad batch: %w", off, err)
						}
						if first && (h.BaseOffset > off || h.LastOffset() < off) {
							return fmt.Errorf("Read(%d) starts with batch %d..%d", off, h.BaseOffset, h.LastOffset())
						}
						b = b[h.Size():]
					}
					return nil
				})
			}
			run(func(i int, rng *rand.Rand) error {
				switch i % 20 {
				case 5:
					_, err := l.EnforceRetention()
					return err
				case 10:
					if leo := l.EndOffset(); leo > 10 {
						return l.Truncate(leo - 5)
					}
				case 15:
					l.BatchAtTimestamp(int64(rng.IntN(100)))
					l.MaxTimestamp()
				}
				return nil
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		})
	}
}
