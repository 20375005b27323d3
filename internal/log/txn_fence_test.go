package log

import (
	"errors"
	"math"
	"testing"
	"time"
)

// coordinatorTxnBatch is what the group coordinator appends for a
// TxnOffsetCommit (records.BuildTxn): transactional, producer id and
// epoch set, no sequence.
func coordinatorTxnBatch(pid int64, epoch int16) []byte {
	return newBatch(1, 10, 1000).producer(pid, epoch, -1).transactional().encode()
}

// TestCoordinatorBatchOfFencedEpochAfterMarker: the transaction
// coordinator fences producer 7 (timeout abort: epoch 3 -> 4) and its abort
// marker (epoch 4) lands on the __consumer_offsets partition; a
// TxnOffsetCommit of the fenced epoch 3 that passed the broker's checks
// just before (the producer's transaction was open here at epoch 3, so
// verification was skipped) comes after the marker. It is refused
// (INVALID_PRODUCER_EPOCH, as Kafka checks the epoch of every
// transactional batch, whatever its origin): accepted, it would take the
// producer's epoch back to 3 and open a transaction no coordinator ends,
// holding the last stable offset below it forever.
func TestCoordinatorBatchOfFencedEpochAfterMarker(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(OSFS{}, newFakeClock())
	cfg.ProducerIDExpirationMs = math.MaxInt64
	l := mustOpen(t, dir, cfg)
	defer l.Close()
	mustAppend(t, l, coordinatorTxnBatch(7, 3), 0) // offset 0: pending commit in the transaction
	mustMarker(t, l, Marker{ProducerID: 7, ProducerEpoch: 4, CoordinatorEpoch: 1, Commit: false, Timestamp: 2000})
	if got := l.LastStableOffset(2); got != 2 {
		t.Fatalf("LSO after the abort = %d, want 2", got)
	}
	_, err := l.Append(coordinatorTxnBatch(7, 3), 0) // the fenced producer's late commit
	if ps, ok := l.Producer(7); ok && ps.Epoch < 4 {
		t.Errorf("producer epoch went back to %d after a marker of epoch 4", ps.Epoch)
	}
	if lso := l.LastStableOffset(l.EndOffset()); lso != l.EndOffset() {
		t.Errorf("LSO stuck at %d (LEO %d): a transaction of the fenced epoch opened after its abort", lso, l.EndOffset())
	}
	if !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Errorf("Append of a fenced epoch's transactional batch = %v, want ErrInvalidProducerEpoch", err)
	}
}

// TestLastStableOffsetNotBelowLogStart: a transaction open from offset 2
// and DeleteRecords (AdvanceStartOffset) past it. The last stable offset is
// the log start offset 6, as in Kafka, not 2, which no longer exists
// (ListOffsets read_committed would answer it, Fetch responses would carry
// LastStableOffset < LogStartOffset).
func TestLastStableOffsetNotBelowLogStart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(OSFS{}, newFakeClock())
	cfg.ProducerIDExpirationMs = math.MaxInt64
	cfg.SegmentBytes = 100 // one batch per segment
	l := mustOpen(t, dir, cfg)
	defer l.Close()
	mustAppend(t, l, newBatch(2, 10, 1000).encode(), 0) // 0-1
	mustAppend(t, l, txnBatch(1, 0, 0, 1), 0)           // 2, opens producer 1's transaction
	for range 4 {
		mustAppend(t, l, newBatch(1, 10, 1000).encode(), 0) // 3-6
	}
	if err := l.AdvanceStartOffset(6); err != nil {
		t.Fatal(err)
	}
	hw := l.EndOffset()
	if lso, start := l.LastStableOffset(hw), l.StartOffset(); lso != start {
		t.Fatalf("LSO %d, want the log start offset %d (the open transaction began below it)", lso, start)
	}
}

// TestVerifiedAppendOfCoordinatorBatchAfterMarker: the token of a
// verification begun for producer 7 is voided by the producer's marker,
// and AppendVerified then refuses a batch that would open a transaction:
// a producer's batch, and as well a transactional batch without sequences
// (the group coordinator's TxnOffsetCommit, records.BuildTxn, which the
// broker appends with AppendVerified too).
func TestVerifiedAppendOfCoordinatorBatchAfterMarker(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(OSFS{}, newFakeClock())
	cfg.ProducerIDExpirationMs = math.MaxInt64
	l := mustOpen(t, dir, cfg)
	defer l.Close()
	mustAppend(t, l, coordinatorTxnBatch(7, 3), 0) // the transaction's first offset commit
	mustMarker(t, l, Marker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 1, Commit: true, Timestamp: 2000})
	token, needed, err := l.BeginVerification(7, 3)
	if err != nil || !needed {
		t.Fatalf("BeginVerification = %d, %v, %v", token, needed, err)
	}
	// Another marker of the producer (a coordinator's retry, or the end
	// of the transaction the verification was for) voids the token.
	mustMarker(t, l, Marker{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 1, Commit: true, Timestamp: 2000})
	// Control: a producer's batch is refused.
	if _, err := l.AppendVerified(txnBatch(7, 3, 0, 1), 0, token); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("AppendVerified of a producer batch with a voided token = %v, want ErrInvalidTxnState", err)
	}
	_, err = l.AppendVerified(coordinatorTxnBatch(7, 3), 0, token)
	if !errors.Is(err, ErrInvalidTxnState) {
		t.Errorf("AppendVerified of a coordinator batch with a voided token = %v, want ErrInvalidTxnState", err)
	}
	if lso := l.LastStableOffset(l.EndOffset()); lso != l.EndOffset() {
		t.Errorf("LSO stuck at %d (LEO %d) by a transaction opened after its marker", lso, l.EndOffset())
	}
}

// TestVerificationsExpire: a verification nobody completes (its request
// gave up) is forgotten by EnforceRetention once verificationExpiryMs
// passed, and its token no longer lets a batch open a transaction.
func TestVerificationsExpire(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	cfg := testConfig(OSFS{}, clock)
	cfg.ProducerIDExpirationMs = math.MaxInt64
	l := mustOpen(t, dir, cfg)
	defer l.Close()
	var tokens []uint64
	for pid := range int64(3) {
		token, needed, err := l.BeginVerification(pid, 0)
		if err != nil || !needed {
			t.Fatalf("BeginVerification(%d) = %d, %v, %v", pid, token, needed, err)
		}
		tokens = append(tokens, token)
	}
	clock.Advance(verificationExpiryMs*time.Millisecond - time.Millisecond)
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if n := len(l.verifying); n != 3 {
		t.Fatalf("%d verifications left before they expire, want 3", n)
	}
	clock.Advance(time.Millisecond)
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if n := len(l.verifying); n != 0 {
		t.Fatalf("%d verifications left after they expired", n)
	}
	if _, err := l.AppendVerified(txnBatch(0, 0, 0, 1), 0, tokens[0]); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("AppendVerified with an expired token = %v, want ErrInvalidTxnState", err)
	}
}

// TestConcurrentVerificationsOfOneProducer: two verifications of producer 7
// are begun before either batch is appended (a client's retry on another
// connection, or two TxnOffsetCommits to one __consumer_offsets
// partition). Both batches are appended: the second verification does not
// void the first one's token, as Kafka's verification guard is shared by
// every request of the producer until a batch or marker of it lands.
func TestConcurrentVerificationsOfOneProducer(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(OSFS{}, newFakeClock())
	cfg.ProducerIDExpirationMs = math.MaxInt64
	l := mustOpen(t, dir, cfg)
	defer l.Close()
	first, needed, err := l.BeginVerification(7, 0)
	if err != nil || !needed {
		t.Fatalf("first BeginVerification = %d, %v, %v", first, needed, err)
	}
	second, needed, err := l.BeginVerification(7, 0)
	if err != nil || !needed {
		t.Fatalf("second BeginVerification = %d, %v, %v", second, needed, err)
	}
	if _, err := l.AppendVerified(txnBatch(7, 0, 0, 1), 0, first); err != nil {
		t.Fatalf("AppendVerified with the first verification's token = %v", err)
	}
	// The first batch opened the transaction: the second needs no token.
	if _, err := l.AppendVerified(txnBatch(7, 0, 1, 1), 0, second); err != nil {
		t.Fatalf("AppendVerified with the second verification's token = %v", err)
	}
	if ps, ok := l.Producer(7); !ok || ps.TxnStartOffset != 0 || ps.LastOffset != 1 {
		t.Errorf("producer 7 = %+v, %v; want its transaction open from offset 0", ps, ok)
	}
}

// TestVerificationTokensUniqueAcrossLogs: a token of one log is never a
// token of another, so a token handed to the wrong log (a partition moved
// under a request) cannot pass its check.
func TestVerificationTokensUniqueAcrossLogs(t *testing.T) {
	cfg := testConfig(OSFS{}, newFakeClock())
	a := mustOpen(t, t.TempDir(), cfg)
	defer a.Close()
	b := mustOpen(t, t.TempDir(), cfg)
	defer b.Close()
	ta, _, err := a.BeginVerification(7, 0)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := b.BeginVerification(7, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ta == tb {
		t.Fatalf("two logs handed out the same token %d", ta)
	}
	if _, err := b.AppendVerified(txnBatch(7, 0, 0, 1), 0, ta); !errors.Is(err, ErrInvalidTxnState) {
		t.Errorf("AppendVerified with another log's token = %v, want ErrInvalidTxnState", err)
	}
}

// TestTruncationVoidsVerifications: a replica that verified producer 7's
// batch as leader, then followed and truncated (to a divergence, or fully
// to a leader's log start past its end, which skips the transaction's
// marker), must not take the batch with the old token if it leads again:
// the coordinator may have ended that transaction meanwhile.
func TestTruncationVoidsVerifications(t *testing.T) {
	for _, tc := range []struct {
		name     string
		truncate func(l *Log) error
	}{
		{"divergence", func(l *Log) error { return l.Truncate(1) }},
		{"fully", func(l *Log) error { return l.TruncateFullyAndStartAt(10) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(OSFS{}, newFakeClock())
			cfg.ProducerIDExpirationMs = math.MaxInt64
			l := mustOpen(t, t.TempDir(), cfg)
			defer l.Close()
			mustAppend(t, l, newBatch(2, 10, 1000).encode(), 0) // 0-1
			token, needed, err := l.BeginVerification(7, 0)
			if err != nil || !needed {
				t.Fatalf("BeginVerification = %d, %v, %v", token, needed, err)
			}
			if err := tc.truncate(l); err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendVerified(txnBatch(7, 0, 0, 1), 0, token); !errors.Is(err, ErrInvalidTxnState) {
				t.Fatalf("AppendVerified with a token from before the truncation = %v, want ErrInvalidTxnState", err)
			}
		})
	}
}

// TestReusedVerificationRenewed: a verification shared by a later request
// counts its age from that request, so that the later request's batch is
// not refused by an expiry sweep right after its own verification.
func TestReusedVerificationRenewed(t *testing.T) {
	clock := newFakeClock()
	cfg := testConfig(OSFS{}, clock)
	cfg.ProducerIDExpirationMs = math.MaxInt64
	l := mustOpen(t, t.TempDir(), cfg)
	defer l.Close()
	if _, _, err := l.BeginVerification(7, 0); err != nil { // a request that gave up
		t.Fatal(err)
	}
	clock.Advance(verificationExpiryMs*time.Millisecond - time.Second)
	token, needed, err := l.BeginVerification(7, 0)
	if err != nil || !needed {
		t.Fatalf("BeginVerification = %d, %v, %v", token, needed, err)
	}
	clock.Advance(2 * time.Second)
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendVerified(txnBatch(7, 0, 0, 1), 0, token); err != nil {
		t.Fatalf("AppendVerified 2 s after its verification = %v", err)
	}
}
