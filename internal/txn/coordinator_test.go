package txn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/records"
)

// memStore is a Store in memory: every append is committed at once.
type memStore struct {
	mu   sync.Mutex
	recs []records.KV
	down error
	// uncommitted, while set, is what WaitCommitted returns.
	uncommitted error
	// loadFailures is how many Loads fail from now on.
	loadFailures int
}

func (s *memStore) Append(_ int32, recs []records.KV) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != nil {
		return 0, s.down
	}
	s.recs = append(s.recs, recs...)
	return int64(len(s.recs)), nil
}

func (s *memStore) WaitCommitted(context.Context, int32, int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uncommitted
}

// MaxBatchBytes is the default max.message.bytes.
func (s *memStore) MaxBatchBytes() int { return 1 << 20 }

func (s *memStore) Load(_ context.Context, fn func(key, value []byte, end int64) error) (int64, error) {
	s.mu.Lock()
	if s.loadFailures > 0 {
		s.loadFailures--
		s.mu.Unlock()
		return 0, errors.New("read failed")
	}
	recs := slices.Clone(s.recs)
	s.mu.Unlock()
	for i, r := range recs {
		if err := fn(r.Key, r.Value, int64(i+1)); err != nil {
			return 0, err
		}
	}
	return int64(len(recs)), nil
}

// state decodes the latest record of id.
func (s *memStore) state(t *testing.T, id string) *txnMeta {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.recs) - 1; i >= 0; i-- {
		got, m, err := decodeRecord(s.recs[i].Key, s.recs[i].Value)
		if err != nil {
			t.Fatal(err)
		}
		if got == id {
			return m
		}
	}
	return nil
}

type ids struct {
	mu   sync.Mutex
	next int64
}

func (a *ids) NextID(context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	return a.next, nil
}

// markers records the markers written; while hold is set, WriteMarkers
// blocks until it is closed.
type markers struct {
	mu      sync.Mutex
	written []string
	hold    chan struct{}
	// fence is how many WriteMarkers calls from now on are fenced.
	fence int
}

func (m *markers) WriteMarkers(ctx context.Context, mk Marker, parts []TopicPartition) map[TopicPartition]error {
	m.mu.Lock()
	hold := m.hold
	m.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	out := map[TopicPartition]error{}
	if err := ctx.Err(); err != nil {
		for _, tp := range parts {
			out[tp] = err
		}
		return out
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fence > 0 {
		m.fence--
		for _, tp := range parts {
			out[tp] = fmt.Errorf("%w: TRANSACTION_COORDINATOR_FENCED", ErrMarkerFenced)
		}
		return out
	}
	for _, tp := range parts {
		m.written = append(m.written, marker(fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), mk.ProducerID, mk.ProducerEpoch, mk.Commit))
		out[tp] = nil
	}
	return out
}

// marker is how markers records a marker written to the partition tp.
func marker(tp string, pid int64, epoch int16, commit bool) string {
	return fmt.Sprintf("%s pid %d epoch %d commit %v", tp, pid, epoch, commit)
}

// wantMarkers fails the test unless the markers written so far are want:
// in the order given on each partition, in any order across partitions.
func (h *harness) wantMarkers(want ...string) {
	h.t.Helper()
	h.mk.mu.Lock()
	got := slices.Clone(h.mk.written)
	h.mk.mu.Unlock()
	want = slices.Clone(want)
	byPartition := func(a, b string) int { return strings.Compare(strings.Fields(a)[0], strings.Fields(b)[0]) }
	slices.SortStableFunc(got, byPartition)
	slices.SortStableFunc(want, byPartition)
	if !slices.Equal(got, want) {
		h.t.Fatalf("markers %q, want %q", got, want)
	}
}

type harness struct {
	t     *testing.T
	c     *Coordinator
	store *memStore
	mk    *markers
	now   time.Time
	mu    sync.Mutex
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, store: &memStore{}, mk: &markers{}, now: time.UnixMilli(1_700_000_000_000)}
	cfg := DefaultConfig()
	cfg.Partitions = 1
	cfg.MarkerRetryBackoff = time.Millisecond
	cfg.Now = func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now }
	h.c = New(cfg, &ids{next: 999}, h.mk)
	t.Cleanup(h.c.Close)
	h.elect(1)
	return h
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
}

// elect makes the coordinator lead partition 0 in epoch and waits for its
// load.
func (h *harness) elect(epoch int32) {
	h.c.Elected(0, epoch, 1, h.store)
	h.waitFor(func() bool {
		h.c.mu.Lock()
		defer h.c.mu.Unlock()
		sh := h.c.shards[0]
		return sh != nil && !sh.loading
	})
}

func (h *harness) waitFor(cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatal("condition not met in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitState waits until id's state (in memory) is s.
func (h *harness) waitState(id string, s State) {
	h.t.Helper()
	h.waitFor(func() bool { return h.c.Describe(id).State == s })
}

func (h *harness) init(id string, pid int64, epoch int16) InitResult {
	return h.c.InitProducerID(context.Background(), id, 60000, pid, epoch)
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: code %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), want, kerr.ErrorForCode(want))
	}
}

var tp0 = TopicPartition{"t", 0}

func TestInitProducerIDBumpsAndFences(t *testing.T) {
	h := newHarness(t)
	r := h.init("a", -1, -1)
	wantCode(t, "first init", r.Code, 0)
	if r.ProducerID != 1000 || r.Epoch != 0 {
		t.Fatalf("first init = %+v, want pid 1000 epoch 0", r)
	}
	r2 := h.init("a", -1, -1)
	if r2.Code != 0 || r2.ProducerID != 1000 || r2.Epoch != 1 {
		t.Fatalf("second init = %+v, want epoch 1", r2)
	}
	// KIP-360: naming the current pair bumps; naming the previous one is a
	// retry answered with the current pair; anything else is fenced.
	r3 := h.init("a", 1000, 1)
	if r3.Code != 0 || r3.Epoch != 2 {
		t.Fatalf("init with the current pair = %+v, want epoch 2", r3)
	}
	if r := h.init("a", 1000, 1); r.Code != 0 || r.Epoch != 2 {
		t.Fatalf("retried init = %+v, want epoch 2 again", r)
	}
	wantCode(t, "init with an old epoch", h.init("a", 1000, 0).Code, kerr.ProducerFenced.Code)
	wantCode(t, "init with another pid", h.init("a", 77, 2).Code, kerr.ProducerFenced.Code)
	wantCode(t, "timeout too long", h.c.InitProducerID(context.Background(), "a", int32(16*time.Minute/time.Millisecond), -1, -1).Code,
		kerr.InvalidTransactionTimeout.Code)
	wantCode(t, "empty id", h.init("", -1, -1).Code, kerr.InvalidRequest.Code)
	if st := h.store.state(t, "a"); st == nil || st.epoch != 2 || st.producerID != 1000 || st.state != StateEmpty {
		t.Fatalf("stored state %+v", st)
	}
}

func TestEndTxnStateTable(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	pid, epoch := r.ProducerID, r.Epoch
	wantCode(t, "EndTxn on Empty", h.c.EndTxn(ctx, "a", pid, epoch, true, false).Code, kerr.InvalidTxnState.Code)
	wantCode(t, "AddPartitions unknown id", h.c.AddPartitions(ctx, "nope", pid, epoch, []TopicPartition{tp0}, false), kerr.InvalidProducerIDMapping.Code)
	wantCode(t, "AddPartitions other pid", h.c.AddPartitions(ctx, "a", pid+1, epoch, []TopicPartition{tp0}, false), kerr.InvalidProducerIDMapping.Code)
	wantCode(t, "AddPartitions other epoch", h.c.AddPartitions(ctx, "a", pid, epoch+1, []TopicPartition{tp0}, false), kerr.ProducerFenced.Code)
	wantCode(t, "AddPartitions", h.c.AddPartitions(ctx, "a", pid, epoch, []TopicPartition{tp0}, false), 0)

	// While the markers are being written, everything is CONCURRENT_TRANSACTIONS.
	hold := make(chan struct{})
	h.mk.mu.Lock()
	h.mk.hold = hold
	h.mk.mu.Unlock()
	wantCode(t, "commit", h.c.EndTxn(ctx, "a", pid, epoch, true, false).Code, 0)
	wantCode(t, "commit retried while completing", h.c.EndTxn(ctx, "a", pid, epoch, true, false).Code, kerr.ConcurrentTransactions.Code)
	wantCode(t, "abort while committing", h.c.EndTxn(ctx, "a", pid, epoch, false, false).Code, kerr.ConcurrentTransactions.Code)
	wantCode(t, "add while committing", h.c.AddPartitions(ctx, "a", pid, epoch, []TopicPartition{tp0}, false), kerr.ConcurrentTransactions.Code)
	wantCode(t, "init while committing", h.init("a", -1, -1).Code, kerr.ConcurrentTransactions.Code)
	if d := h.c.Describe("a"); d.State != StatePrepareCommit {
		t.Fatalf("state %v, want PrepareCommit", d.State)
	}
	close(hold)
	h.waitState("a", StateCompleteCommit)
	wantCode(t, "commit retried after completion", h.c.EndTxn(ctx, "a", pid, epoch, true, false).Code, 0)
	wantCode(t, "abort after commit", h.c.EndTxn(ctx, "a", pid, epoch, false, false).Code, kerr.InvalidTxnState.Code)
	h.wantMarkers(marker("t-0", pid, epoch, true))
	if st := h.store.state(t, "a"); st.state != StateCompleteCommit || len(st.partitions) != 0 {
		t.Fatalf("stored %+v", st)
	}
	// The next transaction, aborted.
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", pid, epoch, []TopicPartition{{"t", 1}}, false), 0)
	wantCode(t, "abort", h.c.EndTxn(ctx, "a", pid, epoch, false, false).Code, 0)
	h.waitState("a", StateCompleteAbort)
	wantCode(t, "abort retried", h.c.EndTxn(ctx, "a", pid, epoch, false, false).Code, 0)
	wantCode(t, "commit after abort", h.c.EndTxn(ctx, "a", pid, epoch, true, false).Code, kerr.InvalidTxnState.Code)
}

// A transaction end whose commit wait fails (the ISR shrank below
// min.insync.replicas right after the PrepareCommit was appended) is
// finished once the record commits: its markers are written and it
// completes, instead of staying PrepareCommit, which would hold every
// partition's last stable offset back for good.
func TestEndFinishesOnceThePrepareCommits(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0}, false), 0)
	h.store.mu.Lock()
	h.store.uncommitted = errors.New("not enough in-sync replicas after the append")
	h.store.mu.Unlock()
	wantCode(t, "commit while the ISR is short", h.c.EndTxn(ctx, "a", r.ProducerID, r.Epoch, true, false).Code,
		kerr.CoordinatorNotAvailable.Code)
	if s := h.c.Describe("a").State; s != StatePrepareCommit {
		t.Fatalf("state %v, want PrepareCommit", s)
	}
	h.store.mu.Lock()
	h.store.uncommitted = nil
	h.store.mu.Unlock()
	h.waitState("a", StateCompleteCommit)
	h.wantMarkers(marker("t-0", r.ProducerID, r.Epoch, true))
}

// A marker fenced by a newer coordinator or producer epoch stops this
// coordinator's markers for the transaction, as in Kafka: it stays
// PrepareCommit here, and the partition's next coordinator finishes it.
func TestFencedMarkerStopsTheMarkers(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0}, false), 0)
	h.mk.mu.Lock()
	h.mk.fence = 1
	h.mk.mu.Unlock()
	wantCode(t, "commit", h.c.EndTxn(ctx, "a", r.ProducerID, r.Epoch, true, false).Code, 0)
	// The shard is loaded, so its only goroutine is the one writing the
	// markers: it ends without writing them again.
	h.c.bg.Wait()
	if s := h.c.Describe("a").State; s != StatePrepareCommit {
		t.Fatalf("state %v after the fence, want PrepareCommit", s)
	}
	h.wantMarkers()
	h.elect(2)
	h.waitState("a", StateCompleteCommit)
	h.wantMarkers(marker("t-0", r.ProducerID, r.Epoch, true))
}

// A failed load is tried again while the partition is led here: the
// shard is served once a load succeeds, and the transaction it found
// prepared is finished, instead of the shard being dropped until the next
// change of leadership.
func TestLoadRetriedAfterFailure(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0}, false), 0)
	// The commit's markers are held, so the state stays PrepareCommit, as
	// a new coordinator finds it; then the partition changes epoch.
	hold := make(chan struct{})
	h.mk.mu.Lock()
	h.mk.hold = hold
	h.mk.mu.Unlock()
	wantCode(t, "commit", h.c.EndTxn(ctx, "a", r.ProducerID, r.Epoch, true, false).Code, 0)
	h.store.mu.Lock()
	h.store.loadFailures = 4
	h.store.mu.Unlock()
	h.c.Elected(0, 2, 1, h.store)
	close(hold)
	wantCode(t, "describe while the loads fail", h.c.Describe("a").Code, kerr.CoordinatorLoadInProgress.Code)
	h.waitState("a", StateCompleteCommit)
	h.store.mu.Lock()
	left := h.store.loadFailures
	h.store.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d load failures left", left)
	}
}

// An InitProducerId during an open transaction fences it: abort markers
// with the bumped epoch, CONCURRENT_TRANSACTIONS, then a new epoch.
func TestInitFencesOpenTransaction(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0}, false), 0)
	wantCode(t, "init while open", h.init("a", -1, -1).Code, kerr.ConcurrentTransactions.Code)
	h.waitState("a", StateCompleteAbort)
	r2 := h.init("a", -1, -1)
	if r2.Code != 0 || r2.Epoch != r.Epoch+2 {
		t.Fatalf("init after the fence = %+v, want epoch %d", r2, r.Epoch+2)
	}
	wantCode(t, "zombie's EndTxn", h.c.EndTxn(ctx, "a", r.ProducerID, r.Epoch, true, false).Code, kerr.ProducerFenced.Code)
	h.wantMarkers(marker("t-0", r.ProducerID, r.Epoch+1, false))
}

func TestTimeoutAbortAndExpiry(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.c.InitProducerID(ctx, "a", 1000, -1, -1)
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0}, false), 0)
	h.advance(500 * time.Millisecond)
	h.c.Tick()
	if s := h.c.Describe("a").State; s != StateOngoing {
		t.Fatalf("state %v before the timeout", s)
	}
	h.advance(20 * time.Second)
	h.c.Tick()
	h.waitState("a", StateCompleteAbort)
	if d := h.c.Describe("a"); d.Epoch != r.Epoch+1 {
		t.Fatalf("epoch %d after the timeout abort, want %d", d.Epoch, r.Epoch+1)
	}
	wantCode(t, "timed-out producer's commit", h.c.EndTxn(ctx, "a", r.ProducerID, r.Epoch, true, false).Code, kerr.ProducerFenced.Code)
	h.advance(8 * 24 * time.Hour)
	h.c.Tick()
	wantCode(t, "describe after expiry", h.c.Describe("a").Code, kerr.TransactionalIDNotFound.Code)
	if st := h.store.state(t, "a"); st != nil {
		t.Fatalf("expired id still stored: %+v", st)
	}
	// A fresh id gets a new producer id.
	if r2 := h.init("a", -1, -1); r2.Code != 0 || r2.ProducerID == r.ProducerID || r2.Epoch != 0 {
		t.Fatalf("init after expiry = %+v", r2)
	}
}

// At epoch 32766 a producer gets a new producer id, and a retry naming the
// old pair gets the new one again.
func TestEpochExhaustion(t *testing.T) {
	h := newHarness(t)
	r := h.init("a", -1, -1)
	h.c.mu.Lock()
	h.c.shards[0].txns["a"].epoch = math.MaxInt16 - 1
	h.c.mu.Unlock()
	r2 := h.init("a", r.ProducerID, math.MaxInt16-1)
	if r2.Code != 0 || r2.ProducerID == r.ProducerID || r2.Epoch != 0 {
		t.Fatalf("init at the last epoch = %+v, want a new producer id at epoch 0", r2)
	}
	if r3 := h.init("a", r.ProducerID, math.MaxInt16-1); r3 != r2 {
		t.Fatalf("retried init = %+v, want %+v", r3, r2)
	}
}

// A new coordinator (leader epoch 2) loads the partition and completes a
// transaction its predecessor left prepared.
func TestFailoverResumesMarkers(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0, {"u", 3}}, false), 0)
	hold := make(chan struct{})
	h.mk.mu.Lock()
	h.mk.hold = hold
	h.mk.mu.Unlock()
	wantCode(t, "commit", h.c.EndTxn(ctx, "a", r.ProducerID, r.Epoch, true, false).Code, 0)
	h.c.Resigned(0, 1)
	close(hold)
	h.mk.mu.Lock()
	h.mk.hold, h.mk.written = nil, nil
	h.mk.mu.Unlock()
	h.elect(2)
	h.waitState("a", StateCompleteCommit)
	h.wantMarkers(marker("t-0", r.ProducerID, r.Epoch, true), marker("u-3", r.ProducerID, r.Epoch, true))
}

// A refused write changes nothing.
func TestRefusedWriteChangesNothing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	h.store.mu.Lock()
	h.store.down = fmt.Errorf("%w: gone", ErrNotLeader)
	h.store.mu.Unlock()
	wantCode(t, "add on a lost leadership", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0}, false), kerr.NotCoordinator.Code)
	if d := h.c.Describe("a"); d.State != StateEmpty || len(d.Partitions) != 0 {
		t.Fatalf("state after a refused write: %+v", d)
	}
}

// Transactions v2: every end bumps the epoch and answers the new pair; a
// retry (the old epoch) gets the same answer; an abort with nothing open
// bumps too; at the last epoch the producer moves to a new id.
func TestEndTxnV2(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	pid, epoch := r.ProducerID, r.Epoch
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", pid, epoch, []TopicPartition{tp0}, true), 0)
	res := h.c.EndTxn(ctx, "a", pid, epoch, true, true)
	if res.Code != 0 || res.ProducerID != pid || res.Epoch != epoch+1 {
		t.Fatalf("v2 commit = %+v, want epoch %d", res, epoch+1)
	}
	h.waitState("a", StateCompleteCommit)
	if retry := h.c.EndTxn(ctx, "a", pid, epoch, true, true); retry != res {
		t.Fatalf("retried v2 commit = %+v, want %+v", retry, res)
	}
	wantCode(t, "retried commit as an abort", h.c.EndTxn(ctx, "a", pid, epoch, false, true).Code, kerr.InvalidTxnState.Code)
	// The next end, with the bumped epoch, while the markers are written:
	// retriable.
	hold := make(chan struct{})
	h.mk.mu.Lock()
	h.mk.hold = hold
	h.mk.mu.Unlock()
	wantCode(t, "add", h.c.AddPartitions(ctx, "a", pid, epoch+1, []TopicPartition{tp0}, true), 0)
	mid := h.c.EndTxn(ctx, "a", pid, epoch+1, false, true)
	wantCode(t, "abort", mid.Code, 0)
	wantCode(t, "the next end during the markers", h.c.EndTxn(ctx, "a", pid, epoch+2, false, true).Code, kerr.ConcurrentTransactions.Code)
	close(hold)
	h.mk.mu.Lock()
	h.mk.hold = nil
	h.mk.mu.Unlock()
	h.waitState("a", StateCompleteAbort)
	epoch++ // the abort above took one bump
	wantCode(t, "commit with nothing open", h.c.EndTxn(ctx, "a", pid, epoch+1, true, true).Code, kerr.InvalidTxnState.Code)
	wantCode(t, "an epoch two back", h.c.EndTxn(ctx, "a", pid, epoch-1, false, true).Code, kerr.ProducerFenced.Code)
	ab := h.c.EndTxn(ctx, "a", pid, epoch+1, false, true)
	if ab.Code != 0 || ab.Epoch != epoch+2 {
		t.Fatalf("v2 abort with nothing open = %+v, want epoch %d", ab, epoch+2)
	}
	h.waitState("a", StateCompleteAbort)
	// The bumped epochs; none for the empty abort.
	h.wantMarkers(marker("t-0", pid, epoch, true), marker("t-0", pid, epoch+1, false))

	// The last epoch: the end moves the producer to a new id.
	h.c.mu.Lock()
	h.c.shards[0].txns["a"].epoch = exhaustedEpoch
	h.c.mu.Unlock()
	wantCode(t, "add at the last epoch", h.c.AddPartitions(ctx, "a", pid, exhaustedEpoch, []TopicPartition{tp0}, true), 0)
	ov := h.c.EndTxn(ctx, "a", pid, exhaustedEpoch, true, true)
	if ov.Code != 0 || ov.ProducerID == pid || ov.Epoch != 0 {
		t.Fatalf("v2 commit at the last epoch = %+v, want a new producer id at epoch 0", ov)
	}
	h.waitState("a", StateCompleteCommit)
	if d := h.c.Describe("a"); d.ProducerID != ov.ProducerID || d.Epoch != 0 {
		t.Fatalf("after the overflow: %+v, want producer %d epoch 0", d, ov.ProducerID)
	}
	if retry := h.c.EndTxn(ctx, "a", pid, exhaustedEpoch, true, true); retry != ov {
		t.Fatalf("retried overflow commit = %+v, want %+v", retry, ov)
	}
	h.mk.mu.Lock()
	defer h.mk.mu.Unlock()
	if last := h.mk.written[len(h.mk.written)-1]; last != marker("t-0", pid, exhaustedEpoch+1, true) {
		t.Fatalf("overflow marker %q, want the old id at epoch 32767", last)
	}
}

// After Close the coordinator leads nothing: a late Elected starts no load
// that Close would not wait for.
func TestElectedAfterCloseLeadsNothing(t *testing.T) {
	h := newHarness(t)
	h.c.Close()
	h.c.Elected(0, 2, 1, h.store)
	h.c.mu.Lock()
	n := len(h.c.shards)
	h.c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d shards led after Close, want 0", n)
	}
	wantCode(t, "describe after Close", h.c.Describe("a").Code, kerr.NotCoordinator.Code)
}
