package broker

// The transaction coordinator's side of the broker: __transaction_state
// partitions led here are handed to the coordinator (internal/txn) with a
// Store over the local replica; markers go to partition leaders (this
// broker's own replicas directly, the others' with WriteTxnMarkers over
// the inter-broker listener); produced transactional batches are verified
// with the coordinator of their transactional id before they are appended
// (KIP-890).

import (
	"context"
	"errors"
	"fmt"

	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/group"
	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
	"github.com/samsa-io/samsa/internal/txn"
)

// txnStateSegmentBytes is __transaction_state's segment.bytes
// (transaction.state.log.segment.bytes).
const txnStateSegmentBytes = 100 << 20

// txnStateStore is a __transaction_state partition led here: the offsets
// store's contract, with the transaction coordinator's not-leader error.
type txnStateStore struct{ offsetsStore }

var _ txn.Store = txnStateStore{}

func (s txnStateStore) Append(epoch int32, recs []records.KV) (int64, error) {
	end, err := s.offsetsStore.Append(epoch, recs)
	return end, txnNotLeader(err)
}

func (s txnStateStore) WaitCommitted(ctx context.Context, epoch int32, end int64) error {
	return txnNotLeader(s.offsetsStore.WaitCommitted(ctx, epoch, end))
}

// Load replays the partition's records (it holds no transactional ones).
func (s txnStateStore) Load(ctx context.Context, fn func(key, value []byte, end int64) error) (int64, error) {
	return s.offsetsStore.Load(ctx, func(r group.Record) error {
		if r.Marker {
			return nil
		}
		return fn(r.Key, r.Value, r.End)
	})
}

func txnNotLeader(err error) error {
	if errors.Is(err, group.ErrNotLeader) {
		return fmt.Errorf("%w: %v", txn.ErrNotLeader, err)
	}
	return err
}

// txnRoleChanged tells the transaction coordinator about this broker's
// role for a __transaction_state partition.
func (b *Broker) txnRoleChanged(s *coord.Snapshot, tp topicPartition, lp *localPartition, leader bool, epoch int32) {
	if tp.topic != txn.StateTopic {
		return
	}
	if !leader {
		b.txns.Resigned(tp.partition, epoch)
		return
	}
	n := b.cfg.Txns.Partitions
	if vt, ok := s.Topics[txn.StateTopic]; ok {
		n = int32(len(vt.Topic.Partitions))
	}
	b.txns.Elected(tp.partition, epoch, n, txnStateStore{offsetsStore{lp: lp, live: b.sessionLive}})
}

// ensureTxnStateTopic creates __transaction_state if it does not exist:
// transaction.state.log.num.partitions partitions, min(RF, live brokers)
// replicas, min.insync.replicas min(min ISR, RF), compacted. It returns
// the topic's partition count.
func (b *Broker) ensureTxnStateTopic(ctx context.Context) (int32, error) {
	if vt, ok := b.cache.Snapshot().Topics[txn.StateTopic]; ok {
		return int32(len(vt.Topic.Partitions)), nil
	}
	rf := min(b.cfg.TxnStateReplicationFactor, int16(len(placementBrokers(b.cache.Snapshot()))))
	if rf < 1 {
		return 0, errors.New("broker: no live broker to place " + txn.StateTopic)
	}
	err := b.createTopic(ctx, txn.StateTopic, b.cfg.Txns.Partitions, rf, nil, map[string]string{
		"cleanup.policy":      "compact",
		"segment.bytes":       strconv.Itoa(txnStateSegmentBytes),
		"min.insync.replicas": strconv.Itoa(int(min(b.cfg.TxnStateMinISR, rf))),
	})
	if err == nil {
		err = b.waitApplied(ctx)
	}
	if err != nil && !errors.Is(err, coord.ErrTopicExists) {
		return 0, err
	}
	vt, ok := b.cache.Snapshot().Topics[txn.StateTopic]
	if !ok {
		return 0, errors.New("broker: " + txn.StateTopic + " not in metadata after creation")
	}
	return int32(len(vt.Topic.Partitions)), nil
}

// txnCoordinatorFor returns the broker that coordinates transactional id
// id (the leader of its __transaction_state partition), creating the topic
// if need be.
func (b *Broker) txnCoordinatorFor(ctx context.Context, id string) (int32, bool, error) {
	n, err := b.ensureTxnStateTopic(ctx)
	if err != nil {
		return -1, false, err
	}
	vp, ok := b.view().Partition(txn.StateTopic, txn.PartitionFor(id, n))
	if !ok || vp.Leader < 0 {
		return -1, false, nil
	}
	return vp.Leader, true, nil
}

// NextID implements txn.ProducerIDs.
func (a *producerIDAllocator) NextID(ctx context.Context) (int64, error) { return a.nextID(ctx) }

// runTxnTicks drives the transaction coordinator's timers until ctx is
// done.
func (b *Broker) runTxnTicks(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.txns.Tick()
		}
	}
}

// peerClients holds one inter-broker client per other broker, for the
// transaction coordinator's requests (markers, verification).
type peerClients struct {
	b  *Broker
	mu sync.Mutex
	// clients by broker id, with the address each was made for.
	clients map[int32]peerClient
}

type peerClient struct {
	addr string
	cl   *kgo.Client
}

// request sends req to broker id and returns its answer.
func (p *peerClients) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, ok := brokerAddr(p.b.view(), id)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", id)
	}
	p.mu.Lock()
	pc, ok := p.clients[id]
	if !ok || pc.addr != addr {
		if ok {
			pc.cl.Close()
		}
		cl, err := kgo.NewClient(p.b.interBrokerClient(kgo.SeedBrokers(addr),
			kgo.ClientID("samsa-txn-"+strconv.Itoa(int(p.b.cfg.NodeID))), kgo.DialTimeout(5*time.Second))...)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		pc = peerClient{addr: addr, cl: cl}
		if p.clients == nil {
			p.clients = map[int32]peerClient{}
		}
		p.clients[id] = pc
	}
	p.mu.Unlock()
	return pc.cl.SeedBrokers()[0].Request(ctx, req)
}

func (p *peerClients) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, pc := range p.clients {
		pc.cl.Close()
		delete(p.clients, id)
	}
}

// markerTimeout bounds one round of writing markers (request.timeout.ms).
const markerTimeout = 30 * time.Second

// WriteMarkers implements txn.MarkerWriter: markers for partitions led
// here are appended and awaited at once, the others are sent to their
// leaders in one WriteTxnMarkers request per broker.
func (b *Broker) WriteMarkers(ctx context.Context, m txn.Marker, parts []txn.TopicPartition) map[txn.TopicPartition]error {
	ctx, cancel := context.WithTimeout(ctx, markerTimeout)
	defer cancel()
	s := b.view()
	out := make(map[txn.TopicPartition]error, len(parts))
	remote := map[int32][]txn.TopicPartition{}
	var local []txn.TopicPartition
	for _, tp := range parts {
		vp, ok := s.Partition(tp.Topic, tp.Partition)
		switch {
		case !ok:
			out[tp] = txn.ErrPartitionGone
		case vp.Leader == b.cfg.NodeID:
			local = append(local, tp)
		case vp.Leader < 0:
			out[tp] = errors.New("no leader")
		default:
			remote[vp.Leader] = append(remote[vp.Leader], tp)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, tp := range local {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.writeMarkerLocally(ctx, s, m, tp)
			mu.Lock()
			out[tp] = err
			mu.Unlock()
		}()
	}
	for id, tps := range remote {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs := b.writeMarkersRemotely(ctx, id, m, tps)
			mu.Lock()
			for i, tp := range tps {
				out[tp] = errs[i]
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// writeMarkersRemotely sends one WriteTxnMarkers request for tps to broker
// id; the error per partition.
func (b *Broker) writeMarkersRemotely(ctx context.Context, id int32, m txn.Marker, tps []txn.TopicPartition) []error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	rm := kmsg.NewWriteTxnMarkersRequestMarker()
	rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	for _, tp := range tps {
		if n := len(rm.Topics); n == 0 || rm.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic = tp.Topic
			rm.Topics = append(rm.Topics, rt)
		}
		rm.Topics[len(rm.Topics)-1].Partitions = append(rm.Topics[len(rm.Topics)-1].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, rm)
	errs := make([]error, len(tps))
	resp, err := b.peers.request(ctx, id, req)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	codes := map[txn.TopicPartition]int16{}
	for _, mk := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range mk.Topics {
			for _, p := range t.Partitions {
				codes[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, tp := range tps {
		code, ok := codes[tp]
		switch {
		case !ok:
			errs[i] = errors.New("no answer for the partition")
		case code != 0:
			errs[i] = markerError(code)
		}
	}
	return errs
}

// markerError is the coordinator's view of a leader's answer to a marker.
func markerError(code int16) error {
	switch code {
	case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
		return fmt.Errorf("%w: %w", txn.ErrMarkerFenced, kerr.ErrorForCode(code))
	}
	return kerr.ErrorForCode(code)
}

// writeMarkerLocally appends m to partition tp led here and waits until it
// is committed.
func (b *Broker) writeMarkerLocally(ctx context.Context, s *coord.Snapshot, m txn.Marker, tp txn.TopicPartition) error {
	if err := ctx.Err(); err != nil {
		return err // the coordinator resigned
	}
	lp, code := b.localLeader(s, tp.Topic, tp.Partition)
	if code != 0 {
		return kerr.ErrorForCode(code)
	}
	if code := errorCode(lp.CheckMinISR()); code != 0 {
		return kerr.ErrorForCode(code)
	}
	info, err := lp.AppendMarker(klog.Marker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit, Timestamp: time.Now().UnixMilli()})
	if err != nil {
		if code := errorCode(err); code == kerr.InvalidProducerEpoch.Code || code == kerr.TransactionCoordinatorFenced.Code {
			return fmt.Errorf("%w: %w", txn.ErrMarkerFenced, err)
		}
		return err
	}
	if err := lp.WaitCommitted(ctx, info.LeaderEpoch, info.LastOffset+1); err != nil {
		return err
	}
	if !b.sessionLive() {
		// Past its session's deadline, a peer may have fenced this
		// broker and the controller elected another leader whose log
		// lacks the marker: report nothing written, as Produce does, and
		// the coordinator writes it again.
		return replica.ErrNotLeader
	}
	if tp.Topic == group.OffsetsTopic {
		b.groups.CompleteTxn(tp.Partition, info.LeaderEpoch, m.ProducerID, m.Commit, info.LastOffset)
	}
	return nil
}

// txnLogVerification is one partition led here of a verification
// (verifyLogs): its log, and the outcome of BeginVerification there.
type txnLogVerification struct {
	tp  txn.TopicPartition
	log *klog.Log
	// token, needed and err are BeginVerification's answer.
	token  uint64
	needed bool
	err    error
}

// verifyLogs verifies producer pid at epoch on the partitions vs, led
// here: BeginVerification on each log, then the coordinator of
// transactional id id asked for those where the producer's transaction is
// not open yet (verifyTxnPartitions). It fills in each one's token and
// returns the coordinator's answer as verifyTxnPartitions does.
//
// Unless verifyOnly, an add answered CONCURRENT_TRANSACTIONS is asked
// again every addRetryBackoff for up to addRetryTimeout, as Kafka does
// (add.partitions.to.txn.retry.backoff.ms): under transactions v2 a
// producer's first batch of a transaction follows its EndTxn at once,
// before the previous transaction's markers are written, and clients
// would otherwise wait for a metadata refresh before they retry. Those
// markers void the tokens begun before them, so each round begins the
// verifications afresh, and a successful add whose token a marker voided
// meanwhile is asked again (the partition is in the transaction by then:
// the coordinator answers at once).
func (b *Broker) verifyLogs(ctx context.Context, id string, pid int64, epoch int16, vs []txnLogVerification, verifyOnly bool) (map[txn.TopicPartition]int16, int16) {
	deadline := time.Now().Add(addRetryTimeout)
	for {
		var ask []txn.TopicPartition
		for i := range vs {
			v := &vs[i]
			v.token, v.needed, v.err = v.log.BeginVerification(pid, epoch)
			if v.err == nil && v.needed {
				ask = append(ask, v.tp)
			}
		}
		if len(ask) == 0 {
			return nil, 0
		}
		per, code := b.verifyTxnPartitions(ctx, id, pid, epoch, ask, verifyOnly)
		if verifyOnly || time.Now().After(deadline) {
			return per, code
		}
		retry := concurrentTxn(per, code)
		if !retry && code == 0 {
			for _, v := range vs {
				if v.err == nil && v.needed && per[v.tp] == 0 && !v.log.VerificationCurrent(pid, v.token) {
					retry = true
					break
				}
			}
		}
		if !retry {
			return per, code
		}
		select {
		case <-ctx.Done():
			return per, code
		case <-time.After(addRetryBackoff):
		}
	}
}

// addRetryBackoff and addRetryTimeout pace the retries of an add answered
// CONCURRENT_TRANSACTIONS (verifyLogs).
const (
	addRetryBackoff = 20 * time.Millisecond
	addRetryTimeout = 5 * time.Second
)

// concurrentTxn reports whether a verification answer is
// CONCURRENT_TRANSACTIONS, for all partitions or one.
func concurrentTxn(per map[txn.TopicPartition]int16, code int16) bool {
	if code == kerr.ConcurrentTransactions.Code {
		return true
	}
	for _, c := range per {
		if c == kerr.ConcurrentTransactions.Code {
			return true
		}
	}
	return false
}

// verifyTxnPartitions asks the coordinator of transactional id id whether
// each of parts is in the producer's open transaction (KIP-890
// verification) or, unless verifyOnly, adds them to it (the implicit add
// of transactions v2): per partition 0 or the error, or one code for all
// (the coordinator's answer, or NOT_ENOUGH_REPLICAS when it could not be
// asked, which producers retry).
func (b *Broker) verifyTxnPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []txn.TopicPartition, verifyOnly bool) (map[txn.TopicPartition]int16, int16) {
	coordID, ok, err := b.txnCoordinatorFor(ctx, id)
	if err != nil || !ok {
		return nil, kerr.NotEnoughReplicas.Code
	}
	if coordID == b.cfg.NodeID {
		if !verifyOnly {
			return nil, b.txns.AddPartitions(ctx, id, pid, epoch, parts, true)
		}
		return b.txns.Verify(id, pid, epoch, parts)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, verifyOnly
	for _, tp := range parts {
		if n := len(rt.Topics); n == 0 || rt.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			t.Topic = tp.Topic
			rt.Topics = append(rt.Topics, t)
		}
		rt.Topics[len(rt.Topics)-1].Partitions = append(rt.Topics[len(rt.Topics)-1].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, rt)
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := b.peers.request(vctx, coordID, req)
	if err != nil {
		return nil, kerr.NotEnoughReplicas.Code
	}
	r := resp.(*kmsg.AddPartitionsToTxnResponse)
	if r.ErrorCode != 0 {
		return nil, r.ErrorCode
	}
	out := map[txn.TopicPartition]int16{}
	for _, tr := range r.Transactions {
		for _, t := range tr.Topics {
			for _, p := range t.Partitions {
				out[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for _, tp := range parts {
		if _, ok := out[tp]; !ok {
			return nil, kerr.NotEnoughReplicas.Code
		}
	}
	return out, 0
}

// produceVerifyCode turns a verification answer into the produce error
// Kafka answers a producer of version v with (KIP-890): errors of the
// coordinator's availability become NOT_ENOUGH_REPLICAS, which every
// producer retries (CONCURRENT_TRANSACTIONS too, but from v12 on, where it
// comes right after an EndTxn and clients retry it as such);
// PRODUCER_FENCED INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE
// INVALID_TXN_STATE before v11.
func produceVerifyCode(code int16, v int16) int16 {
	switch code {
	case 0:
		return 0
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.TransactionAbortable.Code:
		if v < 11 {
			return kerr.InvalidTxnState.Code
		}
		return code
	case kerr.ConcurrentTransactions.Code:
		if v >= 12 {
			return code
		}
		return kerr.NotEnoughReplicas.Code
	case kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code
	case kerr.ClusterAuthorizationFailed.Code:
		return kerr.InvalidTxnState.Code
	}
	return code
}

// transactionalProducer returns the producer of the transactional batches
// of recs (the first batch's header decides, as in Kafka).
func transactionalProducer(recs []byte) (pid int64, epoch int16, ok bool) {
	h, err := klog.ParseBatchHeader(recs)
	// A control batch is refused by the records' validation.
	if err != nil && !errors.Is(err, klog.ErrBatchTooLong) || !h.IsTransactional() || h.IsControl() {
		return 0, 0, false
	}
	return h.ProducerID, h.ProducerEpoch, true
}

// fencedCode answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to request
// versions below since, which predate it (KIP-588).
func fencedCode(code, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// produceVerification is a partition's outcome of verifyProduce: the code
// to answer, or the token to append with.
type produceVerification struct {
	code  int16
	token uint64
	// unverified: transaction.partition.verification.enable is off.
	unverified bool
}

// verifyProduce checks the transactional batches of a produce request: the
// request must name its transactional id, writable by the principal
// (else the request's code TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
// each partition led here where the producer's transaction is not open
// yet is verified with the coordinator, all in one call.
func (b *Broker) verifyProduce(ctx context.Context, s *coord.Snapshot, az authz, r *kmsg.ProduceRequest) (map[txn.TopicPartition]produceVerification, int16) {
	type candidate struct {
		tp    txn.TopicPartition
		lp    *localPartition
		pid   int64
		epoch int16
	}
	var cands []candidate
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			pid, epoch, ok := transactionalProducer(p.Records)
			if !ok {
				continue
			}
			if r.TransactionID == nil || !az.transactionalID(kmsg.ACLOperationWrite, *r.TransactionID) {
				return nil, kerr.TransactionalIDAuthorizationFailed.Code
			}
			if lp, code := b.localLeader(s, t.Topic, p.Partition); code == 0 {
				cands = append(cands, candidate{txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}, lp, pid, epoch})
			}
		}
	}
	if len(cands) == 0 {
		return nil, 0
	}
	out := make(map[txn.TopicPartition]produceVerification, len(cands))
	if !b.cfg.TxnVerification {
		for _, c := range cands {
			out[c.tp] = produceVerification{unverified: true}
		}
		return out, 0
	}
	pid, epoch := cands[0].pid, cands[0].epoch
	vs := make([]txnLogVerification, 0, len(cands))
	for _, c := range cands {
		if c.pid != pid || c.epoch != epoch {
			// One producer per request, as in Kafka.
			return nil, kerr.InvalidProducerIDMapping.Code
		}
		vs = append(vs, txnLogVerification{tp: c.tp, log: c.lp.Log()})
	}
	// Produce v12+ (transactions v2) adds the partitions; older versions
	// only verify that the producer added them.
	per, code := b.verifyLogs(ctx, *r.TransactionID, pid, epoch, vs, r.Version < 12)
	for _, v := range vs {
		switch {
		case v.err != nil:
			out[v.tp] = produceVerification{code: errorCode(v.err)}
			continue
		case !v.needed:
			out[v.tp] = produceVerification{token: v.token}
			continue
		}
		c := code
		if c == 0 {
			c = per[v.tp]
		}
		if c = produceVerifyCode(c, r.Version); c != 0 {
			out[v.tp] = produceVerification{code: c}
		} else {
			out[v.tp] = produceVerification{token: v.token}
		}
	}
	return out, 0
}
