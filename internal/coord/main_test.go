package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
)

// The tests run over real embedded etcd members on 127.0.0.1 with free
// ports. Most share one member (started on first use) and isolate
// themselves by cluster name, i.e. key prefix; tests of restarts start
// their own.

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		shared.e.Close()
		os.RemoveAll(shared.dir)
	}
	if code == 0 {
		// No goroutine is filtered: embed.Etcd.Close and clientv3's Close
		// stop all of theirs, and so must this package.
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

var shared struct {
	once sync.Once
	e    *Embedded
	dir  string
	err  error
}

// quietLogger discards logs unless -v is given, where it shows warnings.
func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// sharedEtcd returns the endpoints of the package's shared etcd member.
func sharedEtcd(t *testing.T) []string {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "coord-test-etcd-")
		if shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shared.e, shared.err = StartEmbedded(ctx, EmbeddedConfig{
			Dir: shared.dir, Name: "shared", ClientURL: "127.0.0.1:0", PeerURL: "127.0.0.1:0", Logger: quietLogger(),
		})
	})
	if shared.err != nil {
		t.Fatalf("shared etcd: %v", shared.err)
	}
	return shared.e.Endpoints()
}

// startEtcd starts a private member in dir; it is closed at cleanup.
func startEtcd(t *testing.T, dir string) *Embedded {
	t.Helper()
	e, err := StartEmbedded(testCtx(t), EmbeddedConfig{
		Dir: dir, Name: "solo", ClientURL: "127.0.0.1:0", PeerURL: "127.0.0.1:0", Logger: quietLogger(),
	})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

var clusterSeq atomic.Int64

// clusterName returns a cluster name no other test uses.
func clusterName(t *testing.T) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("%s-%d", name, clusterSeq.Add(1))
}

func connect(t *testing.T, endpoints []string, cluster string, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithLogger(quietLogger())}, opts...)
	c, err := Connect(testCtx(t), endpoints, cluster, opts...)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx is a context bounding one test's etcd calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it returns nil, failing the test with cond's
// last error after timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", timeout, err)
		}
		<-tick.C
	}
}

func mustIs(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func leaseID(s *Session) clientv3.LeaseID { return s.lease }

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

type atomicBool struct{ b atomic.Bool }
