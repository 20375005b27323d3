package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestCandidateCampaignsAgainAfterTransientError: a standby candidate
// whose campaign fails while its session lives (here its wait for the
// controller key ends with an error: the watch resumes after a short
// disconnection at a compacted revision; in production also etcd without
// a leader, or a leader change under the campaign's write) must campaign
// again, or no controller is left when the active one dies.
func TestCandidateCampaignsAgainAfterTransientError(t *testing.T) {
	e, err := coord.StartEmbedded(context.Background(), coord.EmbeddedConfig{
		Dir: t.TempDir(), Name: "ctl", ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	eps := e.Endpoints()
	const cluster = "transient"
	a := startCandidate(t, eps, cluster, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin, err := coord.Connect(ctx, eps, cluster, coord.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	cache, err := admin.NewCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	controllerIs := func(id int32) func() error {
		return func() error {
			if got := cache.Snapshot().ControllerID; got != id {
				return fmt.Errorf("controller %d, want %d", got, id)
			}
			return nil
		}
	}
	waitFor(t, 10*time.Second, controllerIs(1))

	// Broker 2 reaches etcd through a proxy; its session (5 s) outlives
	// a 2 s disconnection, during which the history it watches from is
	// compacted.
	px := testutil.NewProxy(t, eps[0])
	b := startCandidate(t, px.Endpoints(), cluster, 2)
	raw, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	px.SetDown(true)
	put, err := raw.Put(ctx, "/unrelated", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Compact(ctx, put.Header.Revision); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the fault's length
	px.SetDown(false)
	select {
	case err := <-b.done:
		t.Fatalf("standby candidate's Run returned while its session lives (%v): %v", b.session.Live(), err)
	default:
	}
	a.stop(t)
	waitFor(t, 15*time.Second, controllerIs(2))
}
