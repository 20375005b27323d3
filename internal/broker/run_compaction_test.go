package broker

import (
	"context"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/coord"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := quietLogger()
	e := startTestEtcd(t)
	bfs := &blockCleanFS{entered: make(chan struct{}), first: make(chan struct{}), rest: make(chan struct{})}
	var releaseFirst, releaseRest sync.Once
	defer releaseFirst.Do(func() { close(bfs.first) })
	defer releaseRest.Do(func() { close(bfs.rest) })
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.DataDir = t.TempDir()
	cfg.MetadataEndpoints = e.Endpoints()
	cfg.Logger = quiet
	cfg.LogFS = bfs
	cfg.CleanerBackoff = 100 * time.Millisecond
	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- Run(runCtx, cfg) }()
	defer func() {
		releaseFirst.Do(func() { close(bfs.first) })
		releaseRest.Do(func() { close(bfs.rest) })
		stopRun()
		select {
		case <-runDone:
		case <-time.After(60 * time.Second):
			t.Errorf("Run did not return")
		}
	}()

	obs, err := coord.Connect(ctx, e.Endpoints(), cfg.ClusterName, coord.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	registration := func() (coord.VersionedBroker, bool) {
		vbs, err := obs.VersionedBrokers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, vb := range vbs {
			if vb.ID == cfg.NodeID {
				return vb, true
			}
		}
		return coord.VersionedBroker{}, false
	}
	// await polls cond until it holds, failing the test after d.
	await := func(d time.Duration, what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v", what, d)
			}
		}
	}
	var first coord.VersionedBroker
	await(30*time.Second, "registered", func() bool {
		vb, ok := registration()
		first = vb
		return ok
	})
	addr := first.Host + ":" + strconv.Itoa(int(first.Port))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	compact, seg := "compact", "600"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact, "segment.bytes": &seg}, "c"); err != nil {
		t.Fatal(err)
	}
	// Several segments of the same few keys: the cleaner finds work.
	for i := range 40 {
		pctx, pc := context.WithTimeout(ctx, 10*time.Second)
		err := cl.ProduceSync(pctx, &kgo.Record{Topic: "c", Key: []byte{byte('a' + i%3)}, Value: []byte(strings.Repeat("v", 50))}).FirstErr()
		pc()
		if err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	select {
	case <-bfs.entered:
	case <-ctx.Done():
		t.Fatal("no compaction started")
	}

	// The compaction is under way; a peer fences the broker, which
	// closes its incarnation: once it stops listening, it has told the
	// compaction to stop, and the first segment's write may go on.
	if fenced, err := obs.FenceBroker(ctx, cfg.NodeID, first.CreateRevision); err != nil || !fenced {
		t.Fatalf("FenceBroker = %v, %v", fenced, err)
	}
	await(30*time.Second, "the fenced incarnation stops listening", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	releaseFirst.Do(func() { close(bfs.first) })
	await(60*time.Second, "registered again while the compaction's later segments block", func() bool {
		vb, ok := registration()
		return ok && vb.CreateRevision > first.CreateRevision
	})
}
