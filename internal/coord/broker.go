package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// VersionedBroker is a broker registration with the etcd revisions of its
// key. CreateRevision identifies the live registration (the incarnation):
// it changes when the broker re-registers after a restart or a lost
// session, which is what BrokerRegistered compares.
type VersionedBroker struct {
	meta.Broker
	CreateRevision int64
	ModRevision    int64
}

// Session is a broker's registration, kept alive on an etcd lease. While
// Done is open the registration exists; once it closes (lease expired,
// revoked, or not kept alive for its TTL) the broker must stop acting as a
// leader and register again.
//
// The keepalive goroutine, owned by the session (Close waits for it, and
// Client.Close stops it), is the only writer of the state behind Done/Err.
type Session struct {
	client         *Client
	id             int32 // broker id; never changes
	lease          clientv3.LeaseID
	ttl            time.Duration // granted by etcd; may exceed the request
	timeout        time.Duration // the session timeout asked for
	createRevision int64
	heartbeat      []byte // the heartbeat key's value (heartbeatValue)
	// deadline is when the session counts itself lost unless renewed
	// (see run and Live), twice: on the monotonic clock, as nanoseconds
	// since base, and on the wall clock (Unix nanoseconds), which goes on
	// counting while a suspended machine's monotonic clock stops.
	base         time.Time
	deadlineMono atomic.Int64
	deadlineWall atomic.Int64
	// ending is set by Close before it revokes the lease: from then on
	// the registration may vanish at any moment, so Live is false.
	ending atomic.Bool
	// onRenewal, if set, is told of each renewal attempt (OnRenewal).
	onRenewal func(d time.Duration, ok bool)

	stop context.CancelFunc // stops the keepalive
	done chan struct{}      // closed when the keepalive goroutine exits

	// updateMu serializes UpdateRegistration calls, so each one starts
	// from the registration the previous one stored.
	updateMu sync.Mutex

	// mu guards broker, closing and err.
	mu      sync.Mutex
	broker  meta.Broker // the registration as last stored
	closing bool        // Close was called
	err     error       // nil while live; ErrSessionLost or ErrClosed after
}

// RegisterOption adjusts RegisterBroker.
type RegisterOption func(*registerOptions)

type registerOptions struct {
	// replaceLease is the lease of a registration that may be replaced.
	replaceLease int64
	// onRenewal is told of every background renewal attempt.
	onRenewal func(d time.Duration, ok bool)
}

// OnRenewal has the session report every renewal attempt of its
// keepalive loop (an etcd keepalive and a heartbeat write sent together):
// how long it took and whether it renewed the session (metrics). fn must
// be quick; it runs on the keepalive goroutine.
func OnRenewal(fn func(d time.Duration, ok bool)) RegisterOption {
	return func(o *registerOptions) { o.onRenewal = fn }
}

// ReplacingLease lets RegisterBroker revoke and replace a registration
// attached to lease id: the lease of this broker's previous process, which
// the broker recorded in its data directory (Session.LeaseID). The caller
// must know that process is gone (it holds the data directory's lock), so
// a restart after a crash need not wait out the dead session.
func ReplacingLease(id int64) RegisterOption {
	return func(o *registerOptions) { o.replaceLease = id }
}

// lostMargin is how much earlier than etcd could expire the lease the
// session declares itself lost. etcd counts the TTL from when it handled
// the last keepalive, which is before the client sees the response; the
// margin covers that delay, so the broker stops acting as leader before
// its registration can vanish.
func lostMargin(ttl time.Duration) time.Duration { return min(ttl/4, time.Second) }

// RegisterBroker writes b's registration under brokers/<id>, attached to a
// new lease with the given TTL (rounded up to whole seconds; etcd may
// grant more), and keeps the lease alive in the background. It fails with
// ErrBrokerIDInUse if another live registration holds the id. A leftover
// registration of this very incarnation (an equal meta.Broker, e.g. after
// this process lost its session while the lease still lived) is revoked
// and replaced, as is one attached to the lease ReplacingLease names.
func (c *Client) RegisterBroker(ctx context.Context, b meta.Broker, ttl time.Duration, opts ...RegisterOption) (*Session, error) {
	var ro registerOptions
	for _, o := range opts {
		o(&ro)
	}
	if b.ID < 0 {
		return nil, fmt.Errorf("%w: broker id %d", ErrInvalid, b.ID)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("%w: session ttl %v", ErrInvalid, ttl)
	}
	val, err := meta.Encode(b)
	if err != nil {
		return nil, fmt.Errorf("coord: encode broker %d: %w", b.ID, err)
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	op := fmt.Sprintf("register broker %d", b.ID)
	key := c.keys.abs(relBroker(b.ID))

	g, err := c.etcd.Grant(ctx, int64((ttl+time.Second-1)/time.Second))
	if err != nil {
		return nil, c.wrapErr(op, err)
	}
	revoke := func() {
		rctx, rcancel := context.WithTimeout(c.ctx, c.dialTimeout)
		defer rcancel()
		_, _ = c.etcd.Revoke(rctx, g.ID)
	}
	var createRevision int64
	for attempt := 0; ; attempt++ {
		resp, err := c.etcd.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(g.ID))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			revoke()
			return nil, c.wrapErr(op, err)
		}
		if resp.Succeeded {
			createRevision = resp.Header.Revision
			c.noteRevision(createRevision)
			break
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // expired in between: try again
		}
		// Ours if it holds exactly what we would write: the encodings are
		// compared, not decoded values (an empty list decodes as nil).
		previous := ro.replaceLease != 0 && kvs[0].Lease == ro.replaceLease && attempt < 3
		if !previous && (attempt > 0 || kvs[0].Lease == 0 || string(kvs[0].Value) != string(val)) {
			revoke()
			return nil, fmt.Errorf("coord: %s: %w", op, ErrBrokerIDInUse)
		}
		// Our own incarnation's leftover: revoke its lease, which deletes it.
		if _, err := c.etcd.Revoke(ctx, clientv3.LeaseID(kvs[0].Lease)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			revoke()
			return nil, c.wrapErr(op, err)
		}
	}

	hb, err := json.Marshal(heartbeatValue{Incarnation: createRevision, SessionTimeoutMs: ttl.Milliseconds()})
	if err != nil {
		revoke()
		return nil, fmt.Errorf("coord: %s: %w", op, err)
	}
	s := &Session{
		client:         c,
		id:             b.ID,
		broker:         b,
		lease:          g.ID,
		ttl:            time.Duration(g.TTL) * time.Second,
		timeout:        ttl,
		createRevision: createRevision,
		heartbeat:      hb,
		base:           time.Now(),
		done:           make(chan struct{}),
		onRenewal:      ro.onRenewal,
	}
	// Renew and beat once in the foreground: Grant and Txn may have
	// waited on a reconnecting etcd for a good part of the TTL, and the
	// session must not start out already close to its deadline.
	renewed := time.Now()
	once, err := c.etcd.KeepAliveOnce(ctx, g.ID)
	if err == nil {
		err = s.beat(ctx)
	}
	if err != nil {
		revoke()
		return nil, c.wrapErr(op, err)
	}
	deadline := renewed.Add(s.lostAfter(time.Duration(once.TTL) * time.Second))
	s.setDeadline(deadline)
	kctx, stop := context.WithCancel(c.ctx)
	s.stop = stop
	if err := c.goStart(func() { s.run(kctx, deadline) }); err != nil {
		stop()
		return nil, fmt.Errorf("coord: %s: %w", op, err)
	}
	return s, nil
}

// keepAliveInterval is how often a session renews its lease: an eighth of
// the TTL, between 100 ms and 1 s.
//
// The session renews with one KeepAliveOnce at a time, each bounded by
// keepAliveAttempt, retried every keepAliveRetry after a failure, rather
// than with etcd's KeepAlive stream. A member that is not the etcd leader
// forwards a renewal to the leader and waits for it for up to its request
// timeout (7 s by default); when the leader's host is cut off or dead
// (packets dropped, not refused), that wait outlasts the lease, and the
// stream's renewals queue behind it, although the other members elect a
// new leader (which extends every lease) within a second or two. Killing
// or isolating one broker of three then cost the other brokers their
// registrations. A bounded attempt gives up on the old leader, and the
// retry is forwarded to the new one.
func keepAliveInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/8, 100*time.Millisecond), time.Second)
}

// keepAliveRetry is how soon a failed renewal is tried again.
const keepAliveRetry = 100 * time.Millisecond

// keepAliveAttempt bounds one renewal (its keepalive and its heartbeat, sent
// together): a fifth of the TTL, between 500 ms and 2 s.
func keepAliveAttempt(ttl time.Duration) time.Duration {
	return min(max(ttl/5, 500*time.Millisecond), 2*time.Second)
}

// lostAfter is how long after sending its last successful renewal (a
// keepalive and a heartbeat) the session declares itself lost: before
// etcd can expire the lease (the TTL less lostMargin), and before another
// broker may fence it for want of heartbeats (the session timeout less
// lostMargin; see WatchPeers).
func (s *Session) lostAfter(ttl time.Duration) time.Duration {
	return min(ttl-lostMargin(ttl), s.timeout-lostMargin(s.timeout))
}

// errFenced: the session's registration is gone (a peer fenced it, see
// WatchPeers), found by its heartbeat.
var errFenced = errors.New("coord: registration gone")

// beat writes the session's heartbeat (see WatchPeers) on its lease, only
// while its registration is this incarnation's: a heartbeat that lands
// after a peer fenced the session fails (errFenced) instead of counting as
// a renewal. There is no exception for an etcd that takes no writes (its
// space quota exhausted): a session whose heartbeats do not land ends,
// since peers fence by what landed.
func (s *Session) beat(ctx context.Context) error {
	reg := s.client.keys.abs(relBroker(s.id))
	resp, err := s.client.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(reg), "=", s.createRevision)).
		Then(clientv3.OpPut(s.client.keys.abs(relHeartbeat(s.id)), string(s.heartbeat), clientv3.WithLease(s.lease))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return errFenced
	}
	return nil
}

// run renews the lease and writes a heartbeat, every keepAliveInterval,
// until the session is closed or lost, and closes done then. The session
// is lost when etcd says the lease is gone, or when no renewal has
// succeeded for lostAfter (counted from when the last successful renewal
// was sent, which is no later than etcd or another broker counts from).
func (s *Session) run(ctx context.Context, deadline time.Time) {
	defer close(s.done)
	ttl := s.ttl
	wait := keepAliveInterval(s.timeout)
	for {
		timer := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case <-ctx.Done():
			timer.Stop()
			s.finish("closed")
			return
		case <-timer.C:
		}
		if !time.Now().Before(deadline) {
			s.stop() // let the lease expire; etcd deletes the registration
			s.finish("no keepalive answered within the lease TTL")
			return
		}
		sent := time.Now()
		attemptEnd := sent.Add(keepAliveAttempt(ttl))
		if deadline.Before(attemptEnd) {
			attemptEnd = deadline
		}
		rctx, cancel := context.WithDeadline(ctx, attemptEnd)
		// The keepalive and the heartbeat go together, each handled by
		// etcd after sent: one after the other, an etcd taking 300 ms a
		// request (its disk busy with the brokers' fsyncs) failed every
		// renewal. The renewal counts only if both succeed.
		beaten := make(chan error, 1)
		go func() { beaten <- s.beat(rctx) }()
		resp, err := s.client.etcd.KeepAliveOnce(rctx, s.lease)
		berr := <-beaten
		cancel()
		if err == nil && resp.TTL > 0 && berr != nil {
			if errors.Is(berr, rpctypes.ErrLeaseNotFound) || errors.Is(berr, errFenced) {
				resp.TTL = 0 // revoked or fenced in between
			} else {
				err = berr
			}
		}
		if s.onRenewal != nil && ctx.Err() == nil {
			s.onRenewal(time.Since(sent), err == nil && resp.TTL > 0)
		}
		switch {
		case err == nil && resp.TTL > 0:
			ttl = time.Duration(resp.TTL) * time.Second
			deadline = sent.Add(s.lostAfter(ttl))
			s.setDeadline(deadline)
			wait = keepAliveInterval(s.timeout)
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || err == nil:
			s.finish("lease expired or revoked")
			return
		case ctx.Err() != nil:
			s.finish("closed")
			return
		default:
			// etcd unreachable or without a leader: try again soon.
			wait = keepAliveRetry
		}
	}
}

// finish records why the session ended.
func (s *Session) finish(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.client.ctx.Err() != nil {
		s.err = ErrClosed
		return
	}
	s.err = ErrSessionLost
	s.client.log.Warn("coord: broker session lost", "broker", s.id, "lease", int64(s.lease), "reason", why)
}

// Live reports whether the session is live now: not ended nor closing, and its
// deadline (its last renewal's send plus lostAfter) not passed. Unlike
// Done, which the keepalive goroutine closes once it notices, Live is
// exact at the moment of the call: a leader asks it before acknowledging
// a write, so that it acknowledges nothing once a peer may have fenced
// it, however late its goroutines run.
func (s *Session) Live() bool {
	if s.ending.Load() {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
	}
	return time.Since(s.base) < time.Duration(s.deadlineMono.Load()) && time.Now().UnixNano() < s.deadlineWall.Load()
}

// setDeadline records the session's deadline for Live.
func (s *Session) setDeadline(deadline time.Time) {
	s.deadlineMono.Store(int64(deadline.Sub(s.base)))
	s.deadlineWall.Store(deadline.UnixNano())
}

// bound returns a context that ends with ctx or when the session ends,
// and its cancel function, which the caller must call.
func (s *Session) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Done is closed when the session ends: lease lost, Close, or Client.Close.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session is live, ErrSessionLost after the lease was
// lost, ErrClosed after Close (or Client.Close).
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Broker returns the registration as last stored (RegisterBroker, then
// UpdateRegistration).
func (s *Session) Broker() meta.Broker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broker
}

// TTL returns the lease TTL granted by etcd.
func (s *Session) TTL() time.Duration { return s.ttl }

// LeaseID returns the etcd lease id (for logs and diagnostics).
func (s *Session) LeaseID() int64 { return int64(s.lease) }

// CreateRevision returns the create revision of the registration key,
// which identifies this incarnation (VersionedBroker.CreateRevision).
func (s *Session) CreateRevision() int64 { return s.createRevision }

// Condition holds while this registration is still the live one; a leader
// can fence its own ISR writes with it.
func (s *Session) Condition() Condition { return BrokerRegistered(s.id, s.createRevision) }

// UpdateRegistration rewrites the registration with update applied to a
// copy of it (the broker id cannot change), on the same lease and only
// while the key is still this session's registration: a compare-and-swap
// on its create revision, so a session that was lost or replaced by a
// newer incarnation writes nothing (ErrSessionLost). Calls are serialized,
// each starting from the registration the previous one stored.
func (s *Session) UpdateRegistration(ctx context.Context, update func(b *meta.Broker)) error {
	s.updateMu.Lock()
	defer s.updateMu.Unlock()
	c := s.client
	b := s.Broker()
	update(&b)
	if b.ID != s.id {
		return fmt.Errorf("%w: registration update changes broker id %d to %d", ErrInvalid, s.id, b.ID)
	}
	val, err := meta.Encode(b)
	if err != nil {
		return err
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.abs(relBroker(s.id))
	resp, err := c.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", s.createRevision)).
		Then(clientv3.OpPut(key, string(val), clientv3.WithLease(s.lease))).
		Commit()
	if err != nil {
		return c.wrapErr(fmt.Sprintf("update registration of broker %d", s.id), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("coord: update registration of broker %d: %w", s.id, ErrSessionLost)
	}
	c.noteRevision(resp.Header.Revision)
	s.mu.Lock()
	s.broker = b
	s.mu.Unlock()
	return nil
}

// MarkShuttingDown sets ShuttingDown in the registration (controlled
// shutdown); see UpdateRegistration.
func (s *Session) MarkShuttingDown(ctx context.Context) error {
	return s.UpdateRegistration(ctx, func(b *meta.Broker) { b.ShuttingDown = true })
}

// SetRecovering sets or clears Recovering in the registration (a broker
// restarted after an unclean shutdown); see UpdateRegistration.
func (s *Session) SetRecovering(ctx context.Context, recovering bool) error {
	return s.UpdateRegistration(ctx, func(b *meta.Broker) { b.Recovering = recovering })
}

// Close revokes the lease, which deletes the registration at once (clean
// shutdown), and stops the keepalive. A lease that is already gone is not
// an error. If etcd cannot be reached the keepalive still stops, and the
// registration expires after its TTL.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	already := s.closing
	s.closing = true
	s.mu.Unlock()
	// Not live before the revoke can delete the registration: others may
	// elect new leaders from the moment etcd applies it, while the
	// keepalive goroutine learns of it only later.
	s.ending.Store(true)
	if already {
		<-s.done
		return nil
	}
	ctx, cancel := s.client.opCtx(ctx)
	defer cancel()
	_, err := s.client.etcd.Revoke(ctx, s.lease)
	s.stop()
	<-s.done
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return s.client.wrapErr(fmt.Sprintf("revoke session of broker %d", s.id), err)
	}
	return nil
}

// Brokers lists the registered (live) brokers, ordered by id.
func (c *Client) Brokers(ctx context.Context) ([]meta.Broker, error) {
	vbs, err := c.VersionedBrokers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]meta.Broker, len(vbs))
	for i, vb := range vbs {
		out[i] = vb.Broker
	}
	return out, nil
}

// FenceBroker ends the session of broker id's incarnation whose
// registration has the given create revision: in one transaction it
// deletes the registration, the heartbeat and the controller key if that
// incarnation holds it, as its lease's expiry would, then revokes the
// lease. The broker, whose next renewal fails, registers again as a new
// incarnation. It reports whether it fenced anything: false if that
// incarnation's registration is gone already (expired, fenced, replaced).
func (c *Client) FenceBroker(ctx context.Context, id int32, createRevision int64) (bool, error) {
	return c.fence(ctx, id, createRevision, 0)
}

// fence is FenceBroker, and with heartbeatRevision > 0 only if the
// broker's heartbeat key still has that mod revision: no heartbeat of it
// landed since the one the caller judged by (WatchPeers).
func (c *Client) fence(ctx context.Context, id int32, createRevision, heartbeatRevision int64) (bool, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	op := fmt.Sprintf("fence broker %d", id)
	reg, hb, ctrl := c.keys.abs(relBroker(id)), c.keys.abs(relHeartbeat(id)), c.keys.abs(keyController)
	resp, err := c.etcd.Get(ctx, reg)
	if err != nil {
		return false, c.wrapErr(op, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != createRevision || resp.Kvs[0].Lease == 0 {
		return false, nil
	}
	lease := resp.Kvs[0].Lease
	conds := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(reg), "=", createRevision),
		clientv3.Compare(clientv3.LeaseValue(reg), "=", lease),
	}
	if heartbeatRevision > 0 {
		conds = append(conds, clientv3.Compare(clientv3.ModRevision(hb), "=", heartbeatRevision))
	}
	tresp, err := c.etcd.Txn(ctx).If(conds...).Then(
		clientv3.OpDelete(reg),
		clientv3.OpDelete(hb),
		clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.LeaseValue(ctrl), "=", lease)},
			[]clientv3.Op{clientv3.OpDelete(ctrl)}, nil),
	).Commit()
	if err != nil {
		return false, c.wrapErr(op, err)
	}
	if !tresp.Succeeded {
		return false, nil
	}
	c.noteRevision(tresp.Header.Revision)
	// The keys are gone; revoking the lease ends its keepalives too (and
	// anything else on it). If this fails the lease expires.
	if _, err := c.etcd.Revoke(ctx, clientv3.LeaseID(lease)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		c.log.Warn("coord: fenced broker's lease not revoked; it expires", "broker", id, "err", err)
	}
	return true, nil
}

// VersionedBrokers lists the registered brokers with their key revisions,
// ordered by id.
func (c *Client) VersionedBrokers(ctx context.Context) ([]VersionedBroker, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.etcd.Get(ctx, c.keys.brokers(), clientv3.WithPrefix())
	if err != nil {
		return nil, c.wrapErr("list brokers", err)
	}
	out := make([]VersionedBroker, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if c.keys.parse(string(kv.Key)).kind != kindBroker {
			continue
		}
		var b meta.Broker
		if err := meta.Decode(kv.Value, &b); err != nil {
			return nil, fmt.Errorf("coord: key %s: %w", kv.Key, err)
		}
		out = append(out, VersionedBroker{Broker: b, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision})
	}
	slices.SortFunc(out, func(a, b VersionedBroker) int { return int(a.ID) - int(b.ID) })
	return out, nil
}
