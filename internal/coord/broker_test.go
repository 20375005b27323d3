package coord

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/testutil"
)

var incarnation atomic.Int64

// testBroker returns a registration of a new incarnation of broker id.
func testBroker(id int32) meta.Broker {
	return meta.Broker{ID: id, Host: "127.0.0.1", Port: 9092 + id, Rack: "r1", StartedUnixMs: time.Now().UnixMilli()*1000 + incarnation.Add(1)}
}

func register(t *testing.T, c *Client, b meta.Broker, ttl time.Duration) *Session {
	t.Helper()
	s, err := c.RegisterBroker(testCtx(t), b, ttl)
	if err != nil {
		t.Fatalf("RegisterBroker(%d): %v", b.ID, err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func isDone(s *Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func brokerIDs(t *testing.T, c *Client) []int32 {
	t.Helper()
	bs, err := c.Brokers(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids
}

func TestRegisterBroker(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	a, b := connect(t, eps, cluster), connect(t, eps, cluster)

	b1 := testBroker(1)
	s1 := register(t, a, b1, 2*time.Second)
	s2 := register(t, b, testBroker(2), 2*time.Second)
	if s1.TTL() < 2*time.Second || s1.CreateRevision() == 0 || s1.LeaseID() == 0 || s1.Err() != nil {
		t.Fatalf("session: ttl %v, create revision %d, lease %d, err %v", s1.TTL(), s1.CreateRevision(), s1.LeaseID(), s1.Err())
	}
	if got := brokerIDs(t, a); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("brokers %v, want [1 2]", got)
	}
	vbs, err := b.VersionedBrokers(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(vbs[0].Broker, b1) || vbs[0].CreateRevision != s1.CreateRevision() {
		t.Fatalf("registration %+v, want %+v at create revision %d", vbs[0], b1, s1.CreateRevision())
	}

	// Another process (another incarnation) cannot take a live id, from
	// either client.
	for _, c := range []*Client{a, b} {
		_, err := c.RegisterBroker(testCtx(t), testBroker(1), 2*time.Second)
		mustIs(t, err, ErrBrokerIDInUse)
	}

	// Keepalive holds the registration well past its TTL: the session must
	// not end during 1.5 TTL (a span of time is the condition here).
	select {
	case <-s1.Done():
		t.Fatalf("session ended within 1.5 TTL: %v", s1.Err())
	case <-time.After(3 * time.Second):
	}
	if got := brokerIDs(t, b); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("brokers after 1.5 TTL %v, want [1 2]", got)
	}

	// A clean Close revokes at once: no waiting for the TTL.
	if err := s1.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !isDone(s1) {
		t.Fatal("Done not closed after Close")
	}
	mustIs(t, s1.Err(), ErrClosed)
	if got := brokerIDs(t, b); fmt.Sprint(got) != "[2]" {
		t.Fatalf("brokers after Close %v, want [2]", got)
	}
	if err := s1.Close(testCtx(t)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The id is free again, for any incarnation.
	s1b := register(t, b, testBroker(1), 2*time.Second)
	if s1b.CreateRevision() <= s1.CreateRevision() {
		t.Fatalf("new registration create revision %d, not after %d", s1b.CreateRevision(), s1.CreateRevision())
	}
	if isDone(s2) {
		t.Fatalf("unrelated session ended: %v", s2.Err())
	}
}

func TestRegisterBrokerValidates(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	_, err := c.RegisterBroker(testCtx(t), meta.Broker{ID: -1}, time.Second)
	mustIs(t, err, ErrInvalid)
	_, err = c.RegisterBroker(testCtx(t), meta.Broker{ID: 1}, 0)
	mustIs(t, err, ErrInvalid)
}

// A process whose client died without revoking (crash) leaves its
// registration until the TTL ends; the same incarnation may take it over
// at once, a new one may not.
func TestRegisterBrokerSameIncarnationTakesOver(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	old := connect(t, eps, cluster)
	b := testBroker(7)
	s := register(t, old, b, 10*time.Second)
	old.Close() // no revoke: the lease lives on in etcd
	<-s.Done()
	mustIs(t, s.Err(), ErrClosed)

	c := connect(t, eps, cluster)
	if got := brokerIDs(t, c); fmt.Sprint(got) != "[7]" {
		t.Fatalf("brokers %v, want the leftover [7]", got)
	}
	other := b
	other.StartedUnixMs++
	_, err := c.RegisterBroker(testCtx(t), other, 10*time.Second)
	mustIs(t, err, ErrBrokerIDInUse)

	s2 := register(t, c, b, 10*time.Second)
	if s2.CreateRevision() <= s.CreateRevision() {
		t.Fatalf("takeover create revision %d, not after %d", s2.CreateRevision(), s.CreateRevision())
	}
	vbs, err := c.VersionedBrokers(testCtx(t))
	if err != nil || len(vbs) != 1 || vbs[0].CreateRevision != s2.CreateRevision() {
		t.Fatalf("registrations %+v, %v; want the new one only", vbs, err)
	}
}

// Cut off from etcd, a session ends within its TTL, before or when etcd
// expires the lease, and etcd deletes the registration.
func TestSessionLostWhenEtcdUnreachable(t *testing.T) {
	eps := sharedEtcd(t)
	p := testutil.NewProxy(t, eps[0])
	cluster := clusterName(t)
	c := connect(t, p.Endpoints(), cluster)
	observer := connect(t, eps, cluster)
	const ttl = 3 * time.Second
	s := register(t, c, testBroker(3), ttl)

	p.SetDown(true)
	// Fencing order: the session ends before etcd can delete the
	// registration (which the controller takes as the broker's death).
	waitFor(t, 3*ttl, func() error {
		if ids := brokerIDs(t, observer); len(ids) != 0 {
			return fmt.Errorf("registrations %v remain", ids)
		}
		// Checked after the read: not done now means not done when the
		// registration vanished.
		if !isDone(s) {
			t.Fatal("registration expired in etcd while the session was still live")
		}
		return nil
	})
	mustIs(t, s.Err(), ErrSessionLost)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Logf("Close of a lost session: %v", err) // etcd unreachable: allowed
	}

	// Reachable again: the broker registers anew.
	p.SetDown(false)
	s2 := register(t, c, testBroker(3), ttl)
	select {
	case <-s2.Done():
		t.Fatalf("new session ended within its TTL: %v", s2.Err())
	case <-time.After(ttl):
	}
}

// An etcd that answers every request slowly (here 400 ms, within the
// 500 ms a renewal may take, as one whose disk the brokers' own fsyncs keep
// busy) keeps a 2 s session alive: a renewal's keepalive and heartbeat go
// together. One after the other under one bound, they took 800 ms and every
// renewal failed; one after the other under a bound each, the session
// lasted up to about 310 ms a request (review). Brokers of 2,000 partitions
// under produce load lost their registrations so (issue 11).
func TestSessionSurvivesSlowEtcd(t *testing.T) {
	eps := sharedEtcd(t)
	p := testutil.NewProxy(t, eps[0])
	c := connect(t, p.Endpoints(), clusterName(t))
	const ttl = 2 * time.Second
	s := register(t, c, testBroker(4), ttl)
	const delay = 400 * time.Millisecond
	if delay >= keepAliveAttempt(ttl) {
		t.Fatal("test premise: a renewal must fit in its attempt bound")
	}
	p.SetDelay(delay)
	select {
	case <-s.Done():
		t.Fatalf("session with every etcd request taking %v (bound %v) ended: %v", delay, keepAliveAttempt(ttl), s.Err())
	case <-time.After(4 * ttl): // nothing to await: the session must last
	}
}

// A lease revoked by someone else ends the session at once.
func TestSessionLostWhenLeaseRevoked(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	c := connect(t, eps, cluster)
	other := connect(t, eps, cluster)
	s := register(t, c, testBroker(4), 3*time.Second)
	if _, err := other.etcd.Revoke(testCtx(t), leaseID(s)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("session still live after its lease was revoked")
	}
	mustIs(t, s.Err(), ErrSessionLost)
	if err := s.Close(testCtx(t)); err != nil {
		t.Fatalf("Close after revoke: %v", err)
	}
}

// A new incarnation may replace a dead one's registration at once when it
// names that registration's lease (the broker records it in its data
// directory); naming any other lease changes nothing.
func TestRegisterBrokerReplacingLease(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	old := connect(t, eps, cluster)
	b := testBroker(8)
	s := register(t, old, b, 30*time.Second)
	deadLease := s.LeaseID()
	old.Close() // as after kill -9: the lease lives on in etcd
	<-s.Done()

	c := connect(t, eps, cluster)
	next := b
	next.StartedUnixMs++
	_, err := c.RegisterBroker(testCtx(t), next, 30*time.Second, ReplacingLease(deadLease+1))
	mustIs(t, err, ErrBrokerIDInUse)

	s2, err := c.RegisterBroker(testCtx(t), next, 30*time.Second, ReplacingLease(deadLease))
	if err != nil {
		t.Fatalf("replacing the recorded lease: %v", err)
	}
	defer s2.Close(testCtx(t))
	vbs, err := c.VersionedBrokers(testCtx(t))
	if err != nil || len(vbs) != 1 || vbs[0].StartedUnixMs != next.StartedUnixMs || vbs[0].CreateRevision != s2.CreateRevision() {
		t.Fatalf("registrations %+v, %v; want only the new incarnation", vbs, err)
	}
}

// A session rewrites its own registration in place (same key, lease and
// create revision), each update starting from the last one; once a newer
// incarnation replaced the registration, the old session writes nothing.
func TestUpdateRegistration(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	old := connect(t, eps, cluster)
	b := testBroker(9)
	b.Recovering = true
	s := register(t, old, b, 30*time.Second)
	stored := func(c *Client) VersionedBroker {
		t.Helper()
		vbs, err := c.VersionedBrokers(testCtx(t))
		if err != nil || len(vbs) != 1 {
			t.Fatalf("registrations %+v, %v; want one", vbs, err)
		}
		return vbs[0]
	}
	if vb := stored(old); !vb.Recovering || vb.ShuttingDown {
		t.Fatalf("registered %+v, want recovering", vb)
	}

	if err := s.MarkShuttingDown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRecovering(testCtx(t), false); err != nil {
		t.Fatal(err)
	}
	vb := stored(old)
	if vb.Recovering || !vb.ShuttingDown || vb.CreateRevision != s.CreateRevision() || vb.ModRevision <= vb.CreateRevision {
		t.Fatalf("after the updates: %+v (session create revision %d); want shutting down, not recovering, same key", vb, s.CreateRevision())
	}
	want := b
	want.Recovering, want.ShuttingDown = false, true
	if !reflect.DeepEqual(vb.Broker, want) || !reflect.DeepEqual(s.Broker(), want) {
		t.Fatalf("stored %+v, session says %+v; want %+v", vb.Broker, s.Broker(), want)
	}
	err := s.UpdateRegistration(testCtx(t), func(b *meta.Broker) { b.ID++ })
	mustIs(t, err, ErrInvalid)

	// Still on the session's lease: gone with it.
	lease := s.LeaseID()
	old.Close() // as after kill -9: the lease lives on in etcd
	<-s.Done()
	c := connect(t, eps, cluster)
	next := testBroker(9)
	next.Recovering = true
	s2, err := c.RegisterBroker(testCtx(t), next, 30*time.Second, ReplacingLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(testCtx(t))
	// The dead incarnation's session cannot touch the new registration
	// (its client is closed; a fresh one stands in for a delayed write).
	stale := &Session{client: connect(t, eps, cluster), id: s.id, lease: s.lease, createRevision: s.createRevision, broker: s.Broker()}
	err = stale.SetRecovering(testCtx(t), false)
	mustIs(t, err, ErrSessionLost)
	if vb := stored(c); !vb.Recovering || vb.CreateRevision != s2.CreateRevision() {
		t.Fatalf("new registration %+v changed by the old session", vb)
	}
	if err := s2.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if vbs, err := c.VersionedBrokers(testCtx(t)); err != nil || len(vbs) != 0 {
		t.Fatalf("registrations %+v, %v after Close; want none (updates keep the lease)", vbs, err)
	}
}
