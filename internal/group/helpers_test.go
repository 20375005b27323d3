package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

// memStore is an in-memory Store: Append adds to a slice of records,
// WaitCommitted returns at once, Load replays the slice. Appends can be
// made to fail (fail), the waits for their commits to block until
// released (hold, holdNext), the partition to be led elsewhere meanwhile
// (moveLeadership), and Load to block (loadGate).
type memStore struct {
	mu   sync.Mutex
	recs []records.KV
	// epoch, once set by moveLeadership, is the only leader epoch that
	// Append and WaitCommitted accept (0: any).
	epoch int32
	// failures are errors returned by the next Appends, in order.
	failures []error
	// gate, when set, holds the commit of every Append until it is
	// closed; nextGate only that of the next one. entered and nextEntered
	// receive one value per wait that starts waiting on them.
	gate, entered         chan struct{}
	nextGate, nextEntered chan struct{}
	// gates are the gates of the appends, by their end offset: every
	// WaitCommitted of that end waits for it; the first to wait sends on
	// its entered channel.
	gates map[int64]*memGate
	// loadGate, when set, holds Load until it is closed.
	loadGate chan struct{}
	// loadFailures is how many Loads fail from now on.
	loadFailures int
	// loadSteps, when set, receives a channel from every Load (after
	// loadGate), which then waits until that channel is closed: a test
	// knows an attempt is under way and lets it go on.
	loadSteps chan chan struct{}
	// loadsReturned counts the Loads that returned.
	loadsReturned int
	appends       int
	// maxBatch is MaxBatchBytes (1048588 if 0).
	maxBatch int
	// down, when set, is what every Append returns.
	down error
	// failNth (review) refuses the append whose count is failNth.
	failNth int
	// txn maps the index of a record appended with AppendTxn to its
	// producer.
	txn map[int]int64
	// markers maps the index of a marker appended with appendMarker to
	// it (its pid and commit; its offset is the index).
	markers map[int]lateMarker
}

type memGate struct {
	release, entered chan struct{}
	signaled         bool
}

func (s *memStore) MaxBatchBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.maxBatch == 0 {
		return 1048588
	}
	return s.maxBatch
}

var errStoreDown = errors.New("memstore: injected failure")

func (s *memStore) Append(epoch int32, recs []records.KV) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appends++
	if s.failNth > 0 && s.appends == s.failNth {
		return 0, errStoreDown
	}
	if s.down != nil {
		return 0, s.down
	}
	if len(s.failures) > 0 {
		err := s.failures[0]
		s.failures = s.failures[1:]
		return 0, err
	}
	if s.epoch != 0 && epoch != s.epoch {
		return 0, fmt.Errorf("%w: append in epoch %d, leading in %d", ErrNotLeader, epoch, s.epoch)
	}
	for _, r := range recs {
		s.recs = append(s.recs, records.KV{Key: clone(r.Key), Value: clone(r.Value)})
	}
	end := int64(len(s.recs))
	gate := &memGate{release: s.gate, entered: s.entered}
	if s.nextGate != nil {
		gate = &memGate{release: s.nextGate, entered: s.nextEntered}
		s.nextGate, s.nextEntered = nil, nil
	}
	if gate.release != nil {
		if s.gates == nil {
			s.gates = map[int64]*memGate{}
		}
		s.gates[end] = gate
	}
	return end, nil
}

func (s *memStore) WaitCommitted(ctx context.Context, epoch int32, end int64) error {
	s.mu.Lock()
	gate := s.gates[end]
	var signal chan struct{}
	if gate != nil && !gate.signaled {
		gate.signaled, signal = true, gate.entered
	}
	s.mu.Unlock()
	if signal != nil {
		signal <- struct{}{}
	}
	if gate != nil {
		select {
		case <-gate.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != 0 && epoch != s.epoch {
		return fmt.Errorf("%w: appended in epoch %d, leading in %d", ErrNotLeader, epoch, s.epoch)
	}
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// AppendTxn appends like Append; the records are replayed as the
// producer's (without markers, they stay pending).
func (s *memStore) AppendTxn(epoch int32, pid int64, _ int16, _ uint64, recs []records.KV) (int64, error) {
	end, err := s.Append(epoch, recs)
	if err == nil {
		s.mu.Lock()
		if s.txn == nil {
			s.txn = map[int]int64{}
		}
		for i := int(end) - len(recs); i < int(end); i++ {
			s.txn[i] = pid
		}
		s.mu.Unlock()
	}
	return end, err
}

func (s *memStore) Load(ctx context.Context, fn func(r Record) error) (int64, error) {
	defer func() {
		s.mu.Lock()
		s.loadsReturned++
		s.mu.Unlock()
	}()
	s.mu.Lock()
	gate := s.loadGate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	s.mu.Lock()
	steps := s.loadSteps
	s.mu.Unlock()
	if steps != nil {
		proceed := make(chan struct{})
		select {
		case steps <- proceed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		select {
		case <-proceed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	s.mu.Lock()
	if s.loadFailures > 0 {
		s.loadFailures--
		s.mu.Unlock()
		return 0, errors.New("read failed")
	}
	recs := append([]records.KV{}, s.recs...)
	txn, markers := maps.Clone(s.txn), maps.Clone(s.markers)
	s.mu.Unlock()
	for i, r := range recs {
		if m, ok := markers[i]; ok {
			if err := fn(Record{End: int64(i + 1), ProducerID: m.pid, Marker: true, Commit: m.commit}); err != nil {
				return 0, err
			}
			continue
		}
		pid, ok := txn[i]
		if !ok {
			pid = -1
		}
		if err := fn(Record{Key: r.Key, Value: r.Value, End: int64(i + 1), ProducerID: pid}); err != nil {
			return 0, err
		}
	}
	return int64(len(recs)), nil
}

// appendMarker appends the marker of producer pid's transaction and
// returns its offset, as the broker does before CompleteTxn.
func (s *memStore) appendMarker(pid int64, commit bool) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.markers == nil {
		s.markers = map[int]lateMarker{}
	}
	off := len(s.recs)
	s.recs = append(s.recs, records.KV{})
	s.markers[off] = lateMarker{pid: pid, commit: commit, offset: int64(off)}
	return int64(off)
}

// fail makes the next Appends fail with errs (nothing is appended).
func (s *memStore) fail(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, errs...)
}

// hold makes the commits of later Appends wait until the returned release
// is called.
func (s *memStore) hold() (entered <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate, ent := make(chan struct{}), make(chan struct{}, 64)
	s.gate, s.entered = gate, ent
	var once sync.Once
	return ent, func() {
		once.Do(func() {
			s.mu.Lock()
			s.gate, s.entered = nil, nil
			s.mu.Unlock()
			close(gate)
		})
	}
}

// holdNext makes the commit of the next Append wait until the returned
// release is called.
func (s *memStore) holdNext() (entered <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate, ent := make(chan struct{}), make(chan struct{}, 1)
	s.nextGate, s.nextEntered = gate, ent
	var once sync.Once
	return ent, func() { once.Do(func() { close(gate) }) }
}

// moveLeadership models the partition led by another broker and then
// here again in epoch: records from the keep-th on were truncated (they
// were not replicated), and only epoch is accepted from now on.
func (s *memStore) moveLeadership(epoch int32, keep int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs, s.epoch = s.recs[:keep], epoch
	for end := range s.gates {
		if end > int64(keep) {
			delete(s.gates, end) // the appends it held are gone
		}
	}
}

func (s *memStore) appendCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends
}

func (s *memStore) snapshot() []records.KV {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]records.KV{}, s.recs...)
}

// decodedRecords decodes every stored record.
func (s *memStore) decodedRecords(t *testing.T) []decoded {
	t.Helper()
	var out []decoded
	for _, r := range s.snapshot() {
		d, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			t.Fatalf("stored record does not decode: %v", err)
		}
		out = append(out, d)
	}
	return out
}

// lastGroupRecord is the latest GroupMetadata record of group (nil meta
// for a tombstone), ok false if there is none.
func (s *memStore) lastGroupRecord(t *testing.T, group string) (d decoded, ok bool) {
	t.Helper()
	for _, r := range s.decodedRecords(t) {
		if !r.isOffset && r.group == group {
			d, ok = r, true
		}
	}
	return d, ok
}

// fakeClock is Config.Now for tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const waitTimeout = 5 * time.Second

// harness is a coordinator leading every partition of a one-partition
// __consumer_offsets (unless configured otherwise) over a memStore.
type harness struct {
	t     *testing.T
	clk   *fakeClock
	store *memStore
	c     *Coordinator
	cfg   Config
}

func testConfig(clk *fakeClock) Config {
	cfg := DefaultConfig()
	cfg.Partitions = 1
	cfg.InitialRebalanceDelay = 0
	cfg.Now = clk.Now
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return cfg
}

func newHarness(t *testing.T, configure ...func(*Config)) *harness {
	t.Helper()
	clk := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
	cfg := testConfig(clk)
	for _, f := range configure {
		f(&cfg)
	}
	h := &harness{t: t, clk: clk, store: &memStore{}, cfg: cfg}
	h.c = New(cfg)
	t.Cleanup(h.c.Close)
	for p := range cfg.Partitions {
		h.c.Elected(p, 1, cfg.Partitions, h.store)
	}
	for p := range cfg.Partitions {
		h.waitLoaded(p)
	}
	return h
}

// waitFor polls cond (under no lock) until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// settle waits until no write of the coordinator is in flight.
func (h *harness) settle() {
	h.t.Helper()
	waitFor(h.t, "the writes in flight", func() bool {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		return h.c.inFlightWrites == 0
	})
}

// reload is a fresh coordinator over the same store, as after a failover.
func (h *harness) reload() *harness {
	h.t.Helper()
	c := New(h.cfg)
	h.t.Cleanup(c.Close)
	h2 := &harness{t: h.t, clk: h.clk, store: h.store, c: c, cfg: h.cfg}
	for p := range h.cfg.Partitions {
		c.Elected(p, 1, h.cfg.Partitions, h.store)
	}
	for p := range h.cfg.Partitions {
		h2.waitLoaded(p)
	}
	return h2
}

// The blocking forms of the coordinator's Start methods: each takes
// effect and then waits.

func (c *Coordinator) Join(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	return c.StartJoin(req, clientID, clientHost)(ctx)
}

func (c *Coordinator) Sync(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	return c.StartSync(req)(ctx)
}

func (c *Coordinator) CommitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	return c.StartCommitOffsets(req)(ctx)
}

func (c *Coordinator) FetchOffsets(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	return c.StartFetchOffsets(req)(context.Background())
}

func (c *Coordinator) Delete(ctx context.Context, groups []string) []kmsg.DeleteGroupsResponseGroup {
	return c.StartDelete(groups)(ctx)
}

func (c *Coordinator) DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	return c.StartDeleteOffsets(req)(ctx)
}

func (h *harness) waitLoaded(p int32) {
	h.t.Helper()
	waitFor(h.t, "the partition to load", func() bool {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		sh, ok := h.c.shards[p]
		return ok && !sh.loading
	})
}

// inspect runs f on a group under the coordinator's lock (g nil if the
// group does not exist).
func (h *harness) inspect(gid string, f func(g *group)) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	var g *group
	if sh, ok := h.c.shards[PartitionFor(gid, h.c.partitions)]; ok {
		g = sh.groups[gid]
	}
	f(g)
}

func (h *harness) state(gid string) string {
	s := "Dead"
	h.inspect(gid, func(g *group) {
		if g != nil {
			s = g.state.String()
		}
	})
	return s
}

func (h *harness) generation(gid string) int32 {
	gen := int32(-1)
	h.inspect(gid, func(g *group) {
		if g != nil {
			gen = g.generation
		}
	})
	return gen
}

// waitJoining waits until n members of group have a JoinGroup waiting.
func (h *harness) waitJoining(gid string, n int) {
	h.t.Helper()
	waitFor(h.t, "members to be waiting in JoinGroup", func() bool {
		k := 0
		h.inspect(gid, func(g *group) {
			if g != nil {
				for _, m := range g.members {
					if m.awaitingJoin != nil {
						k++
					}
				}
			}
		})
		return k == n
	})
}

// waitSyncing waits until member has a SyncGroup waiting.
func (h *harness) waitSyncing(gid, member string) {
	h.t.Helper()
	waitFor(h.t, "a SyncGroup to be waiting", func() bool {
		ok := false
		h.inspect(gid, func(g *group) {
			if g != nil && g.members[member] != nil {
				ok = g.members[member].awaitingSync != nil
			}
		})
		return ok
	})
}

func (h *harness) tick(d time.Duration) {
	h.clk.Advance(d)
	h.c.Tick()
}

// consumerMeta is the consumer protocol's subscription to topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 0
	m.Topics = topics
	return m.AppendTo(nil)
}

// proto is a JoinGroup protocol with a consumer subscription.
func proto(name string, topics ...string) kmsg.JoinGroupRequestProtocol {
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = name, consumerMeta(topics...)
	return p
}

func joinReq(group, memberID string, version int16, protocols ...kmsg.JoinGroupRequestProtocol) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group, r.MemberID = group, memberID
	r.SessionTimeoutMillis = 10_000
	r.RebalanceTimeoutMillis = 60_000
	r.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []kmsg.JoinGroupRequestProtocol{proto("range", "t")}
	}
	r.Protocols = protocols
	return r
}

func staticJoinReq(group, memberID, instance string, protocols ...kmsg.JoinGroupRequestProtocol) *kmsg.JoinGroupRequest {
	r := joinReq(group, memberID, 5, protocols...)
	r.InstanceID = kmsg.StringPtr(instance)
	return r
}

// joinAsync sends a JoinGroup in a goroutine; its response arrives on the
// returned channel.
func (h *harness) joinAsync(req *kmsg.JoinGroupRequest, clientID string) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- h.c.Join(context.Background(), req, clientID, "/127.0.0.1") }()
	return ch
}

func (h *harness) syncAsync(req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- h.c.Sync(context.Background(), req) }()
	return ch
}

// join sends a JoinGroup that is expected to be answered without any
// further action (a single member, no initial delay).
func (h *harness) join(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	h.t.Helper()
	return recv(h.t, h.joinAsync(req, "client"))
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for a %T", *new(T))
		panic("unreachable")
	}
}

// pending fails the test if ch already has a value.
func pending[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s answered early: %+v", what, v)
	default:
	}
}

func syncReq(group, memberID string, gen int32, assignments map[string][]byte) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 3
	r.Group, r.MemberID, r.Generation = group, memberID, gen
	for _, id := range sortedKeys(assignments) {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, assignments[id]
		r.GroupAssignment = append(r.GroupAssignment, a)
	}
	return r
}

func heartbeat(h *harness, group, memberID string, gen int32, instance ...string) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 3
	r.Group, r.MemberID, r.Generation = group, memberID, gen
	if len(instance) > 0 {
		r.InstanceID = kmsg.StringPtr(instance[0])
	}
	return h.c.Heartbeat(r).ErrorCode
}

// joinOne makes a single dynamic member join group (v5: MEMBER_ID_REQUIRED
// first) and sync with assignment; it returns its member id and
// generation.
func (h *harness) joinOne(group string, assignment []byte) (string, int32) {
	h.t.Helper()
	r := h.join(joinReq(group, "", 5))
	r = h.join(joinReq(group, r.MemberID, 5))
	if r.ErrorCode != 0 || r.LeaderID != r.MemberID {
		h.t.Fatalf("single join: %+v", r)
	}
	s := recv(h.t, h.syncAsync(syncReq(group, r.MemberID, r.Generation, map[string][]byte{r.MemberID: assignment})))
	if s.ErrorCode != 0 {
		h.t.Fatalf("single sync: error %d", s.ErrorCode)
	}
	return r.MemberID, r.Generation
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error %s (%d), want %s (%d)", what, errName(got), got, errName(want), want)
	}
}
