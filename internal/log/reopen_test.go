package log

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink safe for the parallel subtests.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A cleanly closed log reopens without rebuilding any index, whatever its
// batch layout: a segment whose index is rightly empty (one batch, or a
// small batch then a large one) must not look like a lost index. Regression
// test for a clean restart that rescanned every active segment.
func TestCleanReopenKeepsIndexes(t *testing.T) {
	layouts := []struct {
		name    string
		batches [][2]int // records, value size
	}{
		{"one large batch", [][2]int{{50, 400}}},
		{"small then large", [][2]int{{1, 10}, {50, 400}}},
		{"many small", [][2]int{{2, 30}, {2, 30}, {2, 30}, {2, 30}, {2, 30}, {2, 30}, {2, 30}, {2, 30}}},
		{"large then small", [][2]int{{50, 400}, {1, 10}, {1, 10}}},
	}
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
				var logged lockedBuffer
				cfg.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
				l := mustOpen(t, env.dir, cfg)
				for i, b := range lay.batches {
					mustAppend(t, l, newBatch(b[0], b[1], 1000+int64(i)).encode(), 0)
				}
				want := readAllBatches(t, l)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, env.dir, cfg)
				defer l.Close()
				if got := readAllBatches(t, l); !bytes.Equal(got, want) {
					t.Fatalf("log changed across a clean reopen: %d bytes, want %d", len(got), len(want))
				}
				if s := logged.String(); strings.Contains(s, "rebuilding") || strings.Contains(s, "WARN") {
					t.Fatalf("clean reopen warned:\n%s", s)
				}
			})
		})
	}
}

// An index that lost entries the interval rule says it must have is
// rebuilt, and reads through it stay correct.
func TestReopenRebuildsIncompleteIndex(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg.SegmentBytes = 1 << 20
		var logged lockedBuffer
		cfg.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
		l := mustOpen(t, env.dir, cfg)
		for i := range 20 {
			mustAppend(t, l, newBatch(3, 100, 1000+int64(i)).encode(), 0)
		}
		want := readAllBatches(t, l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// Drop the index's last entry (8 bytes), as a lost tail would.
		name := env.dir + "/00000000000000000000.index"
		f, err := env.fs.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		info, err := f.Stat()
		if err != nil || info.Size() < 16 {
			t.Fatalf("index too small for the test: %v %v", info, err)
		}
		if err := f.Truncate(info.Size() - 8); err != nil {
			t.Fatal(err)
		}
		f.Close()
		l = mustOpen(t, env.dir, cfg)
		defer l.Close()
		if !strings.Contains(logged.String(), "rebuilding") {
			t.Fatalf("incomplete index not detected; log:\n%s", logged.String())
		}
		if got := readAllBatches(t, l); !bytes.Equal(got, want) {
			t.Fatal("reads differ after the index was rebuilt")
		}
	})
}
