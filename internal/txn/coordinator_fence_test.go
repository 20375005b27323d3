package txn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestEndTxnV2WithNewProducerIDDuringOverflowMarkers: a transactions v2
// producer commits at the last epoch; EndTxn answers the new producer id
// (epoch 0) before the markers are written. The client's next EndTxn
// (kgo aborts an empty transaction right after a commit) may come with
// the new id while the markers are still in flight: as Kafka, which checks
// the pending transition first for this case, it is
// CONCURRENT_TRANSACTIONS, which clients retry, not
// INVALID_PRODUCER_ID_MAPPING, which fails the producer.
func TestEndTxnV2WithNewProducerIDDuringOverflowMarkers(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pid := h.openAtLastEpoch(t, "a")
	hold := make(chan struct{})
	h.mk.mu.Lock()
	h.mk.hold = hold
	h.mk.mu.Unlock()
	defer func() {
		close(hold)
		h.mk.mu.Lock()
		h.mk.hold = nil
		h.mk.mu.Unlock()
	}()
	ov := h.c.EndTxn(ctx, "a", pid, exhaustedEpoch, true, true)
	if ov.Code != 0 || ov.ProducerID == pid || ov.Epoch != 0 {
		t.Fatalf("v2 commit at the last epoch = %+v, want a new producer id at epoch 0", ov)
	}
	// The markers are held: the transaction is still PrepareCommit.
	next := h.c.EndTxn(ctx, "a", ov.ProducerID, ov.Epoch, false, true)
	wantCode(t, "EndTxn with the new producer id while the overflow's markers are written", next.Code, kerr.ConcurrentTransactions.Code)
}

// TestTimeoutAbortAtLastEpoch: a transactions v2 producer at the last
// epoch (32766, reached after 32766 v2 transactions) lets a transaction
// time out. The timeout abort fences it with epoch 32767 and, as Kafka,
// moves the producer to a new producer id once the abort completes. The
// producer recovers as Java's TV2 producer does after a fence, with an
// EndTxn (abort) of its epoch, answered as a retry with the new id at
// epoch 0; its next transaction commits, and no marker ever carries an
// epoch past 32767 (a wrapped, negative one, which every leader refuses,
// would leave the transaction incomplete forever).
func TestTimeoutAbortAtLastEpoch(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pid := h.openAtLastEpoch(t, "a")
	h.advance(2 * time.Minute) // past the 60 s timeout
	h.c.Tick()
	h.waitState("a", StateCompleteAbort)
	// The fenced producer's abort: a retry of the fence's bump.
	ab := h.c.EndTxn(ctx, "a", pid, exhaustedEpoch, false, true)
	if ab.Code != 0 {
		t.Fatalf("abort after the timeout abort = %+v", ab)
	}
	if ab.ProducerID == pid || ab.Epoch != 0 {
		t.Errorf("after the fence at the last epoch the producer goes on with (%d, %d), want a new producer id at epoch 0", ab.ProducerID, ab.Epoch)
	}
	wantCode(t, "add in the next transaction", h.c.AddPartitions(ctx, "a", ab.ProducerID, ab.Epoch, []TopicPartition{tp0}, true), 0)
	end := h.c.EndTxn(ctx, "a", ab.ProducerID, ab.Epoch, true, true)
	if end.Code != 0 {
		t.Fatalf("commit of the next transaction = %+v", end)
	}
	h.waitState("a", StateCompleteCommit)
	h.mk.mu.Lock()
	defer h.mk.mu.Unlock()
	for _, w := range h.mk.written {
		if strings.Contains(w, "epoch -") {
			t.Errorf("marker %q: the epoch wrapped; a real leader refuses it (AppendMarker: ErrCorruptBatch; WriteTxnMarkers: INVALID_REQUEST) and the coordinator retries it forever", w)
		}
	}
}

// TestListFilters: ListTransactions' filters, states and producer ids
// (sets: a request may carry millions of ids), and the duration.
func TestListFilters(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pids := map[string]int64{}
	for _, id := range []string{"a", "b", "c"} {
		r := h.init(id, -1, -1)
		if r.Code != 0 {
			t.Fatal(r)
		}
		pids[id] = r.ProducerID
	}
	wantCode(t, "add for b", h.c.AddPartitions(ctx, "b", pids["b"], 0, []TopicPartition{tp0}, false), 0)
	h.advance(10 * time.Second)
	wantCode(t, "add for c", h.c.AddPartitions(ctx, "c", pids["c"], 0, []TopicPartition{tp0}, false), 0)
	filter := make([]int64, 200_000)
	for i := range filter {
		filter[i] = -int64(i) - 2 // matches nothing
	}
	names := func(out []Listed) string {
		var s []string
		for _, l := range out {
			s = append(s, l.ID)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		name     string
		states   []State
		pids     []int64
		duration int64
		want     string
	}{
		{"no filter", nil, nil, -1, "a,b,c"},
		{"Ongoing", []State{StateOngoing}, nil, -1, "b,c"},
		{"Empty or Ongoing", []State{StateEmpty, StateOngoing}, nil, -1, "a,b,c"},
		{"producer ids", nil, append(filter, pids["a"], pids["c"]), -1, "a,c"},
		{"only unmatched producer ids", nil, filter, -1, ""},
		{"open for more than 5 s", []State{StateOngoing}, nil, 5000, "b"},
	} {
		out, loading := h.c.List(tc.states, tc.pids, tc.duration)
		if loading {
			t.Fatalf("%s: loading", tc.name)
		}
		if got := names(out); got != tc.want {
			t.Errorf("%s: listed %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestOversizedStateRefused: a transaction whose state record would not fit
// in a batch of the state topic (too many partitions) is refused with
// UNKNOWN_SERVER_ERROR, as Kafka answers a transaction log append that is
// too large (not COORDINATOR_NOT_AVAILABLE, which clients would retry
// forever); the transaction is left as it was.
func TestOversizedStateRefused(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r := h.init("a", -1, -1)
	var parts []TopicPartition
	for i := range 40_000 { // about 1.4 MB of state
		parts = append(parts, TopicPartition{Topic: fmt.Sprintf("a-rather-long-topic-name-%06d", i), Partition: 0})
	}
	wantCode(t, "add of 40,000 partitions", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, parts, false), kerr.UnknownServerError.Code)
	if st := h.store.state(t, "a"); st.state != StateEmpty || len(st.partitions) != 0 {
		t.Fatalf("after the refused add: state %v with %d partitions, want Empty with none", st.state, len(st.partitions))
	}
	wantCode(t, "add of one partition", h.c.AddPartitions(ctx, "a", r.ProducerID, r.Epoch, []TopicPartition{tp0}, false), 0)
}

// openAtLastEpoch initializes transactional id id, moves it to the last
// epoch a producer can hold (as after 32766 v2 transactions) and opens a
// transaction on tp0; it returns the producer id.
func (h *harness) openAtLastEpoch(t *testing.T, id string) int64 {
	t.Helper()
	pid := h.init(id, -1, -1).ProducerID
	h.c.mu.Lock()
	h.c.shards[0].txns[id].epoch = exhaustedEpoch
	h.c.mu.Unlock()
	wantCode(t, "add at the last epoch", h.c.AddPartitions(context.Background(), id, pid, exhaustedEpoch, []TopicPartition{tp0}, true), 0)
	return pid
}
