package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/plain"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/replica"
)

// levelCounter keeps the messages of log records at Warn and above, and
// counts the fetcher's failed fetches (its Warn and Debug records).
type levelCounter struct {
	mu       sync.Mutex
	msgs     []string
	failures int
	// want and reached: reached is closed at the want'th failure.
	want    int
	reached chan struct{}
}

func (h *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Level >= slog.LevelWarn {
		h.msgs = append(h.msgs, r.Message)
	}
	if r.Message == "replica fetches from the leader fail" || r.Message == "replica fetch failed" {
		if h.failures++; h.failures == h.want {
			close(h.reached)
		}
	}
	return nil
}
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelCounter) WithGroup(string) slog.Handler      { return h }

// A follower whose fetches from its leader always fail (a wrong
// inter-broker password, a TLS or protocol mismatch: failures retrying
// never heals) says so at Warn level at once, and then only once per
// fetchWarnInterval, while it keeps retrying after fetchBackoff; stopping
// it (a role change) does not wait for the backoff. Here the leader
// accepts and closes every connection, as one refusing the follower's
// authentication does.
func TestFollowerFetchFailuresAreReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	fs := klog.NewMemFS(1)
	lcfg := klog.DefaultConfig()
	lcfg.FS = fs
	lcfg.Logger = slog.New(slog.DiscardHandler)
	l, err := klog.Open("/t-0", lcfg)
	if err != nil {
		t.Fatal(err)
	}
	lp := &localPartition{Partition: replica.New("t", 0, 1, l, 0)}
	if err := lp.BecomeFollower(1, 2); err != nil {
		t.Fatal(err)
	}
	defer lp.Close(false)

	const fetches = 5
	h := &levelCounter{want: fetches, reached: make(chan struct{})}
	b := &Broker{cfg: DefaultConfig(), logger: slog.New(h)}
	b.cfg.NodeID = 1
	b.interBroker = interBrokerSecurity{sasl: plain.Auth{User: "broker", Pass: "wrong"}.AsMechanism()}
	f := newFetcher(b, 2, ln.Addr().String())
	began := time.Now()
	f.add(topicPartition{"t", 0}, lp)
	select {
	case <-h.reached:
	case <-time.After(30 * time.Second):
		t.Fatalf("not %d failed fetches in 30 s", fetches)
	}
	elapsed := time.Since(began)
	start := time.Now()
	f.stop()
	if d := time.Since(start); d > time.Second {
		t.Errorf("stopping the failing fetcher took %v", d)
	}
	// A backoff after each failed fetch: no hot loop.
	if min := (fetches - 1) * fetchBackoff; elapsed < min {
		t.Errorf("%d failed fetches in %v, under %v: no backoff", fetches, elapsed, min)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.msgs) != 1 {
		t.Fatalf("Warn records over %d failed fetches: %q; want exactly one (then one per %v)", h.failures, h.msgs, fetchWarnInterval)
	}
}

// The limiter forgets subjects not reported within the interval once it
// holds many, so a fetcher's partitions coming and going do not grow it
// for ever; a subject reported within the interval stays suppressed.
func TestWarnLimiterPrunes(t *testing.T) {
	var w warnLimiter
	t0 := time.Now()
	for i := range maxWarnSubjects {
		if ok, _ := w.allow(fmt.Sprint("old", i), t0); !ok {
			t.Fatalf("first report of old%d suppressed", i)
		}
	}
	later := t0.Add(fetchWarnInterval)
	if ok, _ := w.allow("recent", later.Add(-time.Second)); !ok {
		t.Fatal("first report of recent suppressed")
	}
	if ok, _ := w.allow("new", later); !ok {
		t.Fatal("first report of new suppressed")
	}
	if len(w.last) != 2 {
		t.Errorf("%d subjects kept after pruning, want 2 (recent, new)", len(w.last))
	}
	if ok, _ := w.allow("recent", later); ok {
		t.Error("recent reported again within the interval")
	}
}
