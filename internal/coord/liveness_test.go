package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// fakePeer registers broker id by hand, as a session would, on a lease of
// 60 s that the test keeps alive, with a heartbeat that claims the given
// session timeout: a broker whose lease cannot run out during the test
// (as after an etcd leader change, which extends every lease), so that
// only a fence can end it. beat writes one more heartbeat.
type fakePeer struct {
	id             int32
	createRevision int64
	beat           func()
}

func startFakePeer(t *testing.T, c *Client, id int32, timeout time.Duration) *fakePeer {
	t.Helper()
	ctx := testCtx(t)
	g, err := c.etcd.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	if _, err := c.etcd.KeepAlive(kctx, g.ID); err != nil {
		t.Fatal(err)
	}
	val, err := meta.Encode(testBroker(id))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.etcd.Put(ctx, c.keys.abs(relBroker(id)), string(val), clientv3.WithLease(g.ID))
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePeer{id: id, createRevision: resp.Header.Revision}
	hb, err := json.Marshal(heartbeatValue{Incarnation: p.createRevision, SessionTimeoutMs: timeout.Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	p.beat = func() {
		t.Helper()
		if _, err := c.etcd.Put(testCtx(t), c.keys.abs(relHeartbeat(id)), string(hb), clientv3.WithLease(g.ID)); err != nil {
			t.Errorf("heartbeat of broker %d: %v", id, err)
		}
	}
	p.beat()
	return p
}

// TestWatchPeersFencesSilentBroker: a broker whose heartbeats stop is
// fenced (its lease revoked, its registration gone) once its session
// timeout has passed since its last heartbeat, although its lease is kept
// alive; one that goes on beating is not; and the watcher's own session is
// untouched.
func TestWatchPeersFencesSilentBroker(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	a, other := connect(t, eps, cluster), connect(t, eps, cluster)
	s := register(t, a, testBroker(1), 2*time.Second)
	const timeout = 1500 * time.Millisecond
	silent := startFakePeer(t, other, 2, timeout)
	beating := startFakePeer(t, other, 3, timeout)

	ctx, cancel := context.WithCancel(context.Background())
	watchDone := make(chan error, 1)
	go func() { watchDone <- a.WatchPeers(ctx, s) }()
	defer func() {
		cancel()
		if err := <-watchDone; err != nil {
			t.Errorf("WatchPeers: %v", err)
		}
	}()

	// Broker 3 beats every 100 ms until broker 2 is gone, and a while
	// after.
	lastSilentBeat := time.Now()
	var fencedAfter time.Duration
	waitFor(t, 20*time.Second, func() error {
		beating.beat()
		ids := brokerIDs(t, other)
		if slices.Contains(ids, 2) {
			return fmt.Errorf("silent broker 2 still registered: %v", ids)
		}
		fencedAfter = time.Since(lastSilentBeat)
		return nil
	})
	t.Logf("silent broker fenced %v after its last heartbeat (session timeout %v)", fencedAfter.Round(time.Millisecond), timeout)
	if fencedAfter < timeout {
		t.Errorf("broker 2 fenced %v after its last heartbeat, before its session timeout %v", fencedAfter, timeout)
	}
	for end := time.Now().Add(2 * timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		beating.beat()
	}
	if ids := brokerIDs(t, other); !slices.Equal(ids, []int32{1, 3}) {
		t.Errorf("brokers %v, want [1 3]: the beating broker and the watcher stay", ids)
	}
	if isDone(s) {
		t.Errorf("the watcher's own session ended: %v", s.Err())
	}
	// A fence names one incarnation: the silent broker's registration
	// is gone, and fencing it again does nothing.
	if fenced, err := a.FenceBroker(testCtx(t), silent.id, silent.createRevision); err != nil || fenced {
		t.Errorf("FenceBroker of a fenced incarnation = %v, %v; want false, nil", fenced, err)
	}
	if fenced, err := a.FenceBroker(testCtx(t), beating.id, beating.createRevision+1); err != nil || fenced {
		t.Errorf("FenceBroker of another incarnation = %v, %v; want false, nil", fenced, err)
	}
}

// TestSessionFencedByPeerIsLost: a session whose lease a peer revoked
// learns it at its next renewal (Done, ErrSessionLost), well before its
// TTL.
func TestSessionFencedByPeerIsLost(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	a, b := connect(t, eps, cluster), connect(t, eps, cluster)
	s := register(t, a, testBroker(1), 8*time.Second)
	fenced, err := b.FenceBroker(testCtx(t), 1, s.CreateRevision())
	if err != nil || !fenced {
		t.Fatalf("FenceBroker = %v, %v; want true", fenced, err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("session not lost 5 s after its lease was revoked")
	}
	mustIs(t, s.Err(), ErrSessionLost)
}
