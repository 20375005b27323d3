package log

import (
	"fmt"
	"testing"
	"time"
)

func TestNeedsFlush(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(NewMemFS(1), clock)
	cfg.FlushMessages = 5
	cfg.FlushMs = 1000
	cfg.SegmentBytes = 1 << 20
	l := mustOpen(t, "/p", cfg)
	defer l.Close()
	if l.SyncOnAppend() {
		t.Fatal("SyncOnAppend with flush.messages=5")
	}
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"empty", func() {}, false},
		{"4 messages", func() { mustAppend(t, l, newBatch(4, 10, 1).encode(), 0) }, false},
		{"5 messages", func() { mustAppend(t, l, newBatch(1, 10, 1).encode(), 0) }, true},
		{"flushed", func() { l.Flush() }, false},
		{"1 message", func() { mustAppend(t, l, newBatch(1, 10, 1).encode(), 0) }, false},
		{"flush.ms later", func() { clock.Advance(time.Second) }, true},
		{"flushed again", func() { l.Flush() }, false},
		{"flush.ms with nothing new", func() { clock.Advance(time.Hour) }, false},
		{"a roll", func() {
			c := cfg
			c.SegmentBytes = 1
			l.SetConfig(c)
			mustAppend(t, l, newBatch(1, 10, 1).encode(), 0)
			mustAppend(t, l, newBatch(1, 10, 1).encode(), 0)
			l.SetConfig(cfg)
		}, true},
	}
	for _, s := range steps {
		s.do()
		if got := l.NeedsFlush(); got != s.want {
			t.Fatalf("%s: NeedsFlush = %v, want %v", s.name, got, s.want)
		}
	}
	l.SetConfig(Config{FlushMessages: 1, FS: cfg.FS, Now: clock.Now, Logger: quietLogger})
	if !l.SyncOnAppend() {
		t.Fatal("SyncOnAppend with flush.messages=1")
	}
}

func TestEpochCache(t *testing.T) {
	base := epochCache{{1, 0}, {3, 10}, {4, 25}}
	tests := []struct {
		name string
		op   func(c *epochCache)
		want string
	}{
		{"assign newer", func(c *epochCache) { c.assign(6, 30) }, "[{1 0} {3 10} {4 25} {6 30}]"},
		{"assign same epoch", func(c *epochCache) { c.assign(4, 40) }, "[{1 0} {3 10} {4 25}]"},
		{"assign older is ignored", func(c *epochCache) { c.assign(2, 40) }, "[{1 0} {3 10} {4 25}]"},
		{"assign at the same offset replaces", func(c *epochCache) { c.assign(5, 25) }, "[{1 0} {3 10} {5 25}]"},
		{"truncate from end at a start", func(c *epochCache) { c.truncateFromEnd(10) }, "[{1 0}]"},
		{"truncate from end inside", func(c *epochCache) { c.truncateFromEnd(11) }, "[{1 0} {3 10}]"},
		{"truncate from start inside", func(c *epochCache) { c.truncateFromStart(12) }, "[{3 12} {4 25}]"},
		{"truncate from start at a start", func(c *epochCache) { c.truncateFromStart(25) }, "[{4 25}]"},
		{"truncate from start past all", func(c *epochCache) { c.truncateFromStart(99) }, "[{4 99}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := append(epochCache(nil), base...)
			tt.op(&c)
			if got := fmt.Sprint(c); got != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
			back, err := parseEpochCheckpoint(c.encode())
			if err != nil || fmt.Sprint(back) != tt.want {
				t.Fatalf("checkpoint round trip: %v, %v", back, err)
			}
		})
	}
	for _, tt := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{{-1, -1, -1}, {0, 0, 0}, {1, 1, 10}, {2, 1, 10}, {3, 3, 25}, {4, 4, 50}, {9, -1, -1}} {
		if e, end := base.endOffsetFor(tt.epoch, 50); e != tt.wantEpoch || end != tt.wantEnd {
			t.Errorf("endOffsetFor(%d) = %d, %d; want %d, %d", tt.epoch, e, end, tt.wantEpoch, tt.wantEnd)
		}
	}
	if e, end := epochCache(nil).endOffsetFor(3, 50); e != -1 || end != -1 {
		t.Errorf("empty cache: endOffsetFor = %d, %d", e, end)
	}
	for _, bad := range []string{"", "0\n", "1\n0\n", "0\n2\n1 0\n", "0\n2\n3 5\n2 9\n", "0\n1\nx y\n"} {
		if _, err := parseEpochCheckpoint([]byte(bad)); err == nil {
			t.Errorf("parseEpochCheckpoint(%q) accepted", bad)
		}
	}
}
