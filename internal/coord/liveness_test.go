package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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

// TestWatchPeersNoZombieAroundNoSpace: while etcd takes no writes (its
// NOSPACE alarm), no heartbeat lands and every session ends; nobody is
// fenced while its session counts itself live, during the alarm or once
// it is disarmed (when the first heartbeats land again, the others' last
// ones are old).
func TestWatchPeersNoZombieAroundNoSpace(t *testing.T) {
	e := startEtcd(t, t.TempDir())
	eps := e.Endpoints()
	cluster := clusterName(t)
	obs := connect(t, eps, cluster)
	const timeout = 2 * time.Second
	var clients []*Client
	var sessions []*Session
	for id := int32(1); id <= 3; id++ {
		c := connect(t, eps, cluster)
		clients = append(clients, c)
		sessions = append(sessions, register(t, c, testBroker(id), timeout))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { clients[i].WatchPeers(ctx, sessions[i]) })
	}
	defer func() { cancel(); wg.Wait() }()
	// Heartbeats landing for a while, so each watcher has counted its own.
	waitFor(t, 10*time.Second, func() error {
		resp, err := obs.etcd.Get(testCtx(t), obs.keys.abs(dirHeartbeats), clientv3.WithPrefix())
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			if kv.Version < 5 {
				return fmt.Errorf("heartbeat %s written %d times", kv.Key, kv.Version)
			}
		}
		if len(resp.Kvs) != 3 {
			return fmt.Errorf("%d heartbeats", len(resp.Kvs))
		}
		return nil
	})

	// A registration gone while its session counts itself live would be
	// a zombie leader.
	zombies := map[int32]bool{}
	watchFor := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
			resp, err := obs.etcd.Get(testCtx(t), obs.keys.abs(dirBrokers), clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			present := map[int32]bool{}
			for _, kv := range resp.Kvs {
				present[obs.keys.parse(string(kv.Key)).broker] = true
			}
			for i, s := range sessions {
				if id := int32(i + 1); !present[id] && s.Live() {
					zombies[id] = true
				}
			}
		}
	}
	srv := e.etcd.Server
	alarm := func(a pb.AlarmRequest_AlarmAction) {
		if _, err := srv.Alarm(testCtx(t), &pb.AlarmRequest{Action: a, MemberID: uint64(srv.MemberID()), Alarm: pb.AlarmType_NOSPACE}); err != nil {
			t.Fatalf("alarm %v: %v", a, err)
		}
	}
	alarm(pb.AlarmRequest_ACTIVATE)
	if _, err := obs.etcd.Put(testCtx(t), obs.keys.abs("probe"), "x"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("put under NOSPACE: %v, want ErrNoSpace", err)
	}
	watchFor(3 * time.Second)
	for i, s := range sessions {
		if !isDone(s) {
			t.Errorf("session %d lived through 3 s of NOSPACE (no heartbeat can land)", i+1)
		}
	}
	alarm(pb.AlarmRequest_DEACTIVATE)
	watchFor(3 * time.Second)
	for id := range zombies {
		t.Errorf("broker %d: registration gone while its session counted itself live", id)
	}
}

// stallWatcher stands in for the heartbeat watch: the test delivers its
// responses, as a watch stream that stalls (the WatchPeers goroutine not
// scheduled, a slow stream) would deliver etcd's events late, in revision
// order.
type stallWatcher struct {
	clientv3.Watcher
	in chan clientv3.WatchResponse
}

func (w *stallWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case r := <-w.in:
				select {
				case out <- r:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// TestWatchPeersStaleViewFencesNoLivePeer: a watcher whose view is late
// (its goroutine not scheduled, a slow stream) sees a peer's heartbeat,
// then, 2.2 s later, two of its own: by its view the peer has been silent
// for longer than its session timeout. But the peer's heartbeats landed
// every 100 ms meanwhile: the fence, conditioned on the heartbeat the
// watcher judged by, must not happen.
func TestWatchPeersStaleViewFencesNoLivePeer(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	a, other := connect(t, eps, cluster), connect(t, eps, cluster)
	const timeout = 2 * time.Second
	s := register(t, a, testBroker(1), timeout)
	p := startFakePeer(t, other, 2, timeout)
	resp, err := other.etcd.Get(testCtx(t), other.keys.abs(relHeartbeat(2)))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("peer heartbeat: %v %v", resp, err)
	}
	judged := resp.Kvs[0].ModRevision

	sw := &stallWatcher{Watcher: a.etcd.Watcher, in: make(chan clientv3.WatchResponse)}
	a.etcd.Watcher = sw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.WatchPeers(ctx, s) }()
	defer func() { cancel(); <-done }()
	ev := func(id int32, inc, rev int64) clientv3.WatchResponse {
		v, _ := json.Marshal(heartbeatValue{Incarnation: inc, SessionTimeoutMs: timeout.Milliseconds()})
		return clientv3.WatchResponse{Events: []*clientv3.Event{{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{
			Key: []byte(a.keys.abs(relHeartbeat(id))), Value: v, ModRevision: rev, CreateRevision: rev}}}}
	}
	sw.in <- ev(2, p.createRevision, judged)
	// The peer beats on, every 100 ms, while the watcher's view stalls.
	for end := time.Now().Add(2200 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		p.beat()
	}
	sw.in <- ev(1, s.CreateRevision(), judged+1)
	sw.in <- ev(1, s.CreateRevision(), judged+2)
	// The fence, if any, happens while the watcher handles that event:
	// the second of these two is taken from the stream only once the
	// watcher has come back for the first.
	sw.in <- ev(3, 1, judged+3)
	sw.in <- ev(3, 1, judged+4)
	if ids := brokerIDs(t, other); !slices.Contains(ids, 2) {
		t.Errorf("broker 2, whose heartbeats landed every 100 ms, was fenced on a stale view: brokers %v", ids)
	}
}
