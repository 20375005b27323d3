package broker

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	klog "github.com/samsa-io/samsa/internal/log"
)

// blockCleanFS is the OS file system, except that opening a compaction's
// .cleaned log file blocks the opener (a cleaner goroutine): the first
// such open until first is closed, every later one until rest is.
type blockCleanFS struct {
	klog.OSFS
	opens   atomic.Int32
	entered chan struct{} // closed at the first open
	first   chan struct{}
	rest    chan struct{}
}

func (f *blockCleanFS) OpenFile(name string, flag int, perm fs.FileMode) (klog.File, error) {
	if strings.HasSuffix(name, ".log.cleaned") {
		if f.opens.Add(1) == 1 {
			close(f.entered)
			<-f.first
		} else {
			<-f.rest
		}
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// A broker under Run that loses its session in the middle of a compaction
// registers again without waiting for the compaction to finish: closing
// the incarnation stops the cleaner's run at its next check, as Kafka's
// shutdown aborts its cleaner. The compaction here would never finish
// (every segment after the first blocks), so before the fix (Close waited
// for the whole run before closing the logs) the broker never registered
// again. Found by review (issue 10).
func TestRunRegistersAgainDuringCompaction(t *testing.T) {
	e := startTestEtcd(t)
	bfs := &blockCleanFS{entered: make(chan struct{}), first: make(chan struct{}), rest: make(chan struct{})}
	h := startRun(t, e, e.Endpoints(), func(cfg *Config) {
		cfg.LogFS = bfs
		cfg.CleanerBackoff = 100 * time.Millisecond
	})
	// Cleanups run last first: the blocked compactions go on before Run
	// is stopped.
	var releaseFirst, releaseRest sync.Once
	t.Cleanup(func() {
		releaseFirst.Do(func() { close(bfs.first) })
		releaseRest.Do(func() { close(bfs.rest) })
	})
	first := h.registration()
	addr := strings.TrimPrefix(h.cfg.Listeners[0], "PLAINTEXT://")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	compact, seg := "compact", "600"
	if _, err := kadm.NewClient(cl).CreateTopic(h.ctx, 1, 1, map[string]*string{"cleanup.policy": &compact, "segment.bytes": &seg}, "c"); err != nil {
		t.Fatal(err)
	}
	// Several segments of the same few keys: the cleaner finds work.
	for i := range 40 {
		pctx, pc := context.WithTimeout(h.ctx, 10*time.Second)
		err := cl.ProduceSync(pctx, &kgo.Record{Topic: "c", Key: []byte{byte('a' + i%3)}, Value: []byte(strings.Repeat("v", 50))}).FirstErr()
		pc()
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	select {
	case <-bfs.entered:
	case <-h.ctx.Done():
		t.Fatal("no compaction started")
	}

	// The compaction is under way; a peer fences the broker, which
	// closes its incarnation: once it stops listening, it has told the
	// compaction to stop, and the first segment's write may go on.
	if fenced, err := h.obs.FenceBroker(h.ctx, h.cfg.NodeID, first); err != nil || !fenced {
		t.Fatalf("FenceBroker = %v, %v", fenced, err)
	}
	h.waitFor("the fenced incarnation to stop listening", func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		return errors.New("still listening")
	})
	releaseFirst.Do(func() { close(bfs.first) })
	h.waitRegisteredAfter(first)
}
