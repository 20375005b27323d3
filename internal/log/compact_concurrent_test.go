package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests stop a Compact at a step (compactHook) and do other work on
// the log meanwhile. They set the package's compactHook, so they do not run
// in parallel.

// compactResult is what a Compact run in the background returned.
type compactResult struct {
	stats CompactStats
	err   error
}

// stoppedCompaction is a Compact running in the background, stopped at a
// step until released.
type stoppedCompaction struct {
	once     sync.Once
	release  chan struct{}
	done     chan compactResult
	finished chan struct{} // closed when Compact has returned
	// failStep, if set before Release, is returned by the step the
	// compaction was stopped at (a crash there).
	failStep error
}

// Release lets the compaction go on (more than once is fine).
func (c *stoppedCompaction) Release() { c.once.Do(func() { close(c.release) }) }

// compactStoppedAt starts l.Compact(opts) in the background, stopped at the
// first step named step until released; it returns once the compaction has
// reached that step.
func compactStoppedAt(t *testing.T, l *Log, opts CompactOptions, step string) *stoppedCompaction {
	t.Helper()
	c := &stoppedCompaction{release: make(chan struct{}), done: make(chan compactResult, 1), finished: make(chan struct{})}
	entered := make(chan struct{})
	reached := false
	compactHook = func(s string) error {
		if s == step && !reached {
			reached = true
			close(entered)
			<-c.release
			return c.failStep
		}
		return nil
	}
	t.Cleanup(func() {
		c.Release()
		<-c.finished
		compactHook = nil
	})
	go func() {
		defer close(c.finished)
		stats, err := l.Compact(opts)
		c.done <- compactResult{stats, err}
	}()
	select {
	case <-entered:
	case r := <-c.done:
		t.Fatalf("Compact returned (%+v, %v) before step %s", r.stats, r.err, step)
	}
	return c
}

// within fails the test if fn does not return within a generous time: it
// detects an operation blocked behind the stopped compaction c (which it
// then releases, so that the test can end), it does not wait for anything
// to happen.
func within(t *testing.T, c *stoppedCompaction, what string, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- fn() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(20 * time.Second):
		c.Release()
		t.Fatalf("%s: still blocked after 20s behind a compaction", what)
	}
}

// buildCompactable writes a log of several segments in which key "x" has
// the value "old" in the first batch and "new" in a later closed segment;
// it returns the log, every record and the offset of x=new.
func buildCompactable(t *testing.T, env testEnv) (*Log, Config, []testRecord, int64) {
	t.Helper()
	cfg := testConfig(env.fs, newFakeClock())
	cfg.SegmentBytes = 1024
	cfg.RetentionMs = -1
	l := mustOpen(t, env.dir, cfg)
	all := []testRecord{{offset: 0, key: "x", value: []byte("old")}}
	mustAppend(t, l, keyedBatch(1000, kv{"x", []byte("old")}), 0)
	all = append(all, fillKeyed(t, l, rand.New(rand.NewPCG(5, 5)), 60, 8, 1000)...)
	info := mustAppend(t, l, keyedBatch(1000, kv{"x", []byte("new")}), 0)
	all = append(all, testRecord{offset: info.FirstOffset, key: "x", value: []byte("new")})
	all = append(all, fillKeyed(t, l, rand.New(rand.NewPCG(6, 6)), 60, 8, 1000)...)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() < 6 {
		t.Fatalf("%d segments; the test needs more", l.NumSegments())
	}
	return l, cfg, all, info.FirstOffset
}

// latestValues maps each key to the value of its last record.
func latestValues(recs []testRecord) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		if r.value == nil {
			m[r.key] = "<tombstone>"
		} else {
			m[r.key] = string(r.value)
		}
	}
	return m
}

func checkLatest(t *testing.T, l *Log, want map[string]string) {
	t.Helper()
	got := latestValues(decodeAll(t, readAllBatches(t, l), l.StartOffset()))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("latest values\n got %v\nwant %v", got, want)
	}
}

func noLeftovers(t *testing.T, fsys FS, dir string) {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
			t.Fatalf("leftover %s", n)
		}
	}
}

// TestCompactWithoutFlushLock: while a compaction is stopped in the middle
// of its run, flushes, appends, a new leader epoch, retention and reads
// all complete; the compaction then finishes normally.
func TestCompactWithoutFlushLock(t *testing.T) {
	for _, mk := range fileSystems(t) {
		for _, step := range []string{"mapped", "synced"} {
			env := mk(t)
			t.Run(env.name+"/"+step, func(t *testing.T) {
				l, _, all, _ := buildCompactable(t, env)
				defer l.Close()
				sc := compactStoppedAt(t, l, CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}, step)
				within(t, sc, "Append and Flush at "+step, func() error {
					info, err := l.Append(keyedBatch(1000, kv{"y", []byte(step)}), l.LatestEpoch())
					all = append(all, testRecord{offset: info.FirstOffset, key: "y", value: []byte(step)})
					if err != nil {
						return err
					}
					return l.Flush()
				})
				within(t, sc, "AssignEpoch at "+step, func() error { return l.AssignEpoch(l.LatestEpoch() + 1) })
				within(t, sc, "EnforceRetention at "+step, func() error { _, err := l.EnforceRetention(); return err })
				within(t, sc, "Read at "+step, func() error { _, err := l.Read(0, l.EndOffset(), 1<<20, true); return err })
				sc.Release()
				r := <-sc.done
				if r.err != nil || r.stats.Interrupted {
					t.Fatalf("Compact: %+v, %v", r.stats, r.err)
				}
				if r.stats.SegmentsCleaned == 0 {
					t.Fatalf("nothing compacted: %+v", r.stats)
				}
				checkLatest(t, l, latestValues(all))
				noLeftovers(t, env.fs, env.dir)
			})
		}
	}
}

// TestCompactTruncatedMeanwhile: a truncation during a compaction wins. The
// truncation cuts the record (x=new) that supersedes x=old; the compaction
// that had planned to remove x=old must not, whether the truncation comes
// before it wrote anything or after it wrote (but did not commit) a
// segment. After a simulated power loss the log is the truncated one.
func TestCompactTruncatedMeanwhile(t *testing.T) {
	for _, mk := range fileSystems(t) {
		for _, step := range []string{"mapped", "synced"} {
			env := mk(t)
			t.Run(env.name+"/"+step, func(t *testing.T) {
				l, cfg, all, cut := buildCompactable(t, env)
				defer func() { l.Close() }()
				sc := compactStoppedAt(t, l, CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}, step)
				within(t, sc, "Truncate", func() error { return l.Truncate(cut) })
				truncated := readAllBatches(t, l)
				var kept []testRecord
				for _, r := range all {
					if r.offset < l.EndOffset() {
						kept = append(kept, r)
					}
				}
				want := latestValues(kept)
				if want["x"] != "old" {
					t.Fatalf("x = %q after the truncation", want["x"])
				}
				sc.Release()
				r := <-sc.done
				if r.err != nil || !r.stats.Interrupted || r.stats.SegmentsCleaned != 0 {
					t.Fatalf("Compact: %+v, %v; want interrupted, nothing cleaned", r.stats, r.err)
				}
				if !bytes.Equal(readAllBatches(t, l), truncated) {
					t.Fatal("the compaction changed the truncated log")
				}
				checkLatest(t, l, want)
				noLeftovers(t, env.fs, env.dir)
				// The next compaction, bounded by the new LEO, keeps x=old.
				if _, err := l.Compact(CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}); err != nil {
					t.Fatal(err)
				}
				checkLatest(t, l, want)
				if env.mem != nil {
					env.mem.Crash()
					l = mustOpen(t, env.dir, cfg)
					checkLatest(t, l, want)
					noLeftovers(t, env.fs, env.dir)
				}
			})
		}
	}
}

// TestCompactTruncatedAndCrashed: the truncation comes while the compaction
// has written a segment's .cleaned files, and the machine then loses power
// before the compaction goes on: the reopened log is the truncated one.
func TestCompactTruncatedAndCrashed(t *testing.T) {
	env := fileSystems(t)[1](t)
	l, cfg, all, cut := buildCompactable(t, env)
	sc := compactStoppedAt(t, l, CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}, "synced")
	within(t, sc, "Truncate", func() error { return l.Truncate(cut) })
	truncated := readAllBatches(t, l)
	env.mem.Crash()
	sc.failStep = errors.New("crash")
	sc.Release()
	<-sc.done
	l = mustOpen(t, env.dir, cfg)
	defer l.Close()
	if !bytes.Equal(readAllBatches(t, l), truncated) {
		t.Fatal("reopened log differs from the truncated one")
	}
	var kept []testRecord
	for _, r := range all {
		if r.offset < cut {
			kept = append(kept, r)
		}
	}
	checkLatest(t, l, latestValues(kept))
	noLeftovers(t, env.fs, env.dir)
}

// TestCompactRetentionMeanwhile: retention deletes the oldest segments
// while a compaction is stopped after planning them; the compaction skips
// them and cleans the rest.
func TestCompactRetentionMeanwhile(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			l, cfg, all, _ := buildCompactable(t, env)
			defer l.Close()
			sc := compactStoppedAt(t, l, CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}, "mapped")
			size := l.Size()
			c := cfg
			c.RetentionBytes = size / 2
			l.SetConfig(c)
			within(t, sc, "EnforceRetention", func() error {
				n, err := l.EnforceRetention()
				if err == nil && n == 0 {
					err = errors.New("deleted nothing")
				}
				return err
			})
			l.SetConfig(cfg)
			start := l.StartOffset()
			sc.Release()
			r := <-sc.done
			if r.err != nil || r.stats.SegmentsCleaned == 0 {
				t.Fatalf("Compact: %+v, %v", r.stats, r.err)
			}
			var kept []testRecord
			for _, rec := range all {
				if rec.offset >= start {
					kept = append(kept, rec)
				}
			}
			checkLatest(t, l, latestValues(kept))
			noLeftovers(t, env.fs, env.dir)
		})
	}
}

// TestCompactClosedMeanwhile: Close during a compaction waits for it to
// stop, which it does with ErrClosed, leaving no files behind.
func TestCompactClosedMeanwhile(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			l, cfg, all, _ := buildCompactable(t, env)
			sc := compactStoppedAt(t, l, CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1}, "synced")
			closed := make(chan error, 1)
			go func() { closed <- l.Close() }()
			for !l.compactStop.Load() { // Close has told the compaction to stop
				runtime.Gosched()
			}
			sc.Release()
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			if r := <-sc.done; !errors.Is(r.err, ErrClosed) || r.stats.SegmentsCleaned != 0 {
				t.Fatalf("Compact: %+v, %v; want ErrClosed", r.stats, r.err)
			}
			noLeftovers(t, env.fs, env.dir)
			l = mustOpen(t, env.dir, cfg)
			defer l.Close()
			checkLatest(t, l, latestValues(all))
		})
	}
}
