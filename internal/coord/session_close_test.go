package coord

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// holdRevoke wraps a client's Lease API. Once armed, KeepAliveOnce
// announces itself on parked and waits for release before it goes to
// etcd, and Revoke announces on revoked, after etcd applied it, and waits
// for release before it returns: the interleaving of Session.Close with
// the keepalive goroutine is then fixed, without sleeps.
type holdRevoke struct {
	clientv3.Lease
	armed   atomic.Bool
	parked  chan struct{} // one KeepAliveOnce is waiting (closed once)
	parkedN atomic.Int32
	revoked chan struct{} // a Revoke was applied (closed once)
	release chan struct{}
}

func (h *holdRevoke) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	if h.armed.Load() {
		if h.parkedN.Add(1) == 1 {
			close(h.parked)
		}
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Lease.KeepAliveOnce(ctx, id)
}

func (h *holdRevoke) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	resp, err := h.Lease.Revoke(ctx, id)
	if h.armed.Load() {
		close(h.revoked)
		<-h.release
	}
	return resp, err
}

// TestSessionNotLiveOnceClosing: Session.Close revokes the
// lease (deleting the registration, the heartbeat and the controller key
// at once, for every other broker and the controller to see) before it
// makes the session not live: Live() stays true from the moment etcd
// applied the revoke until the keepalive goroutine has exited. The
// broker's logFailed calls Session.Close while the broker keeps serving
// its other partitions, whose produce and offset-commit acknowledgements
// are gated by Live() alone ("acknowledges no write ... before the
// controller can elect anyone else", docs/replication.md). Live must be
// false before the registration can vanish.
func TestSessionNotLiveOnceClosing(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	a, obs := connect(t, eps, cluster), connect(t, eps, cluster)
	h := &holdRevoke{Lease: a.etcd.Lease, parked: make(chan struct{}), revoked: make(chan struct{}), release: make(chan struct{})}
	a.etcd.Lease = h // before the session's goroutine exists: no race
	released := false
	defer func() {
		if !released {
			close(h.release)
		}
	}()
	s := register(t, a, testBroker(1), 9*time.Second)
	if !s.Live() {
		t.Fatal("fresh session not live")
	}

	// Park the keepalive goroutine in its next renewal (before it
	// reaches etcd), so it cannot learn of the revoke on its own.
	h.armed.Store(true)
	select {
	case <-h.parked:
	case <-time.After(10 * time.Second):
		t.Fatal("the keepalive goroutine did not renew")
	}

	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	select {
	case <-h.revoked:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not revoke")
	}

	// etcd applied the revoke: the registration is gone for everyone.
	if ids := brokerIDs(t, obs); slices.Contains(ids, 1) {
		t.Fatalf("registration still there after the revoke: %v", ids)
	}
	live := s.Live()
	close(h.release)
	released = true
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if s.Live() {
		t.Errorf("Live after Close returned")
	}
	if live {
		t.Errorf("Session.Live() = true after the session's own revoke deleted its registration: " +
			"a leader that closes its session (Broker.logFailed) acknowledges writes on its other partitions " +
			"while the controller already elects other leaders; Close must end Live before it revokes")
	}
}
