package test

// The request path's memory budget under hostile clients (issue 16): a
// client that pipelines huge fetches and never reads the responses, and a
// slowloris of 100 MB produce frames, must not grow the broker's memory
// without bound, cost it its registration, or stop it serving a normal
// client meanwhile.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/protocol"
)

const (
	// memTopic holds the data the hostile fetches ask for.
	memTopic           = "bad-input-memory"
	memPartitions      = 4
	memBatchesPerPart  = 16  // of about 1 MB each: 64 MB in the topic
	memRecordsPerBatch = 960 // of 1 KiB
	// memBound is how far the broker's heap may grow over its idle figure.
	memBound = 512 << 20
	// memBoundRace is memBound under the race detector, which slows the
	// collector's marking: the heap then overshoots its goal (twice what
	// was live) further while the attack allocates. Measured on 2 cores:
	// 355 MiB without the race detector, 440-540 MiB with it, for the
	// same 160-180 MiB of the request budget in use.
	memBoundRace = 768 << 20
	// memAbort stops the attack once the heap has grown this much, so
	// that a broker without a budget fails the test rather than the
	// machine.
	memAbort = 3 << 30
	// memAttack is how long the hostile clients keep at it, at least.
	memAttack = 20 * time.Second
	// memLargeWait is how long, from the attack's start, a normal
	// produce sent during it may take to be answered.
	memLargeWait = 60 * time.Second
)

// memHeapBytes is the Go heap's object bytes (HeapAlloc: live and not yet
// collected), read without stopping the world. The broker runs in this
// process, so this is its heap plus the test's (small, and in the idle
// figure).
func memHeapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// memFetchFrames returns n pipelined Fetch v11 requests for every
// partition of memTopic from offset 0, asking for 1 GiB.
func memFetchFrames(rc *badConn, n int) []byte {
	var out []byte
	for range n {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID = -1
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = 1 << 30
		t := kmsg.NewFetchRequestTopic()
		t.Topic = memTopic
		for p := range int32(memPartitions) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition = p
			fp.FetchOffset = 0
			fp.PartitionMaxBytes = 1 << 30
			fp.CurrentLeaderEpoch = -1
			fp.LogStartOffset = -1
			t.Partitions = append(t.Partitions, fp)
		}
		req.Topics = append(req.Topics, t)
		out = append(out, rc.frame(req)...)
	}
	return out
}

// memSlowlorisHeader is the start of a Produce v9 frame whose size prefix
// claims size bytes: the header and the body up to the records' length.
func memSlowlorisHeader(size int) []byte {
	id := "slowloris"
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint16(b, 0) // Produce
	b = binary.BigEndian.AppendUint16(b, 9)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	b = append(b, 0)                        // header tags
	b = append(b, 0)                        // null transactional id
	b = binary.BigEndian.AppendUint16(b, 1) // acks
	b = binary.BigEndian.AppendUint32(b, 30000)
	b = append(b, 2) // one topic
	b = append(b, byte(len(memTopic)+1))
	b = append(b, memTopic...)
	b = append(b, 2) // one partition
	b = binary.BigEndian.AppendUint32(b, 0)
	// The records' compact length (a 4-byte uvarint of length+1): the
	// rest of the frame but the three tag sections that end it.
	records := size - (len(b) - 4) - 4 - 3
	return binary.AppendUvarint(b, uint64(records+1))
}

// TestBadInputMemoryBudget: 20 connections each pipeline 100 Fetch requests
// for 1 GiB of a topic holding 64 MB and never read a response, while 20
// others send 100 MB produce frames slowly. The broker's heap must stay
// within memBound of its idle figure, its registration must hold, and a
// normal client must produce and consume meanwhile.
func TestBadInputMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a 64 MB topic and attacks for 20 s")
	}
	// A session timeout above the default 9 s: the race detector on a
	// loaded machine has been seen to delay the in-process etcd's lease
	// renewals past 9 s with or without an attack. Losing the
	// registration to the attack itself (issue 16) took memory that the
	// heap bound below rules out.
	b := StartBroker(t, func(c *broker.Config) { c.SessionTimeout = 20 * time.Second })
	e := newBadInputEnv(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e2eCreateTopic(ctx, t, e.b.Addr, memTopic, memPartitions, nil)

	// Fill the topic: 16 produce requests of one ~1 MB batch per partition.
	fill := dialBad(t, e.b.Addr)
	for range memBatchesPerPart {
		var parts []badPart
		for p := range int32(memPartitions) {
			parts = append(parts, badPart{memTopic, p, badBatch(memRecordsPerBatch, 1024)})
		}
		resp := fill.roundTrip(badProduceRequest(1, parts...))
		for _, code := range badProduceCodes(resp) {
			if code != 0 {
				t.Fatalf("filling %s: error code %d", memTopic, code)
			}
		}
	}
	fill.c.Close()
	e.checkHealthy(t)

	runtime.GC()
	runtime.GC()
	idle := memHeapBytes()
	t.Logf("idle heap %d MiB", idle>>20)

	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	closeAll := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	defer closeAll()

	// The sampler records the peak and stops the attack if the heap runs
	// away.
	var peak, peakUsed atomic.Int64
	stop := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			h := memHeapBytes()
			if h > peak.Load() {
				peak.Store(h)
			}
			if u := e.b.RequestBudget().Used(); u > peakUsed.Load() {
				peakUsed.Store(u)
			}
			if h-idle > memAbort {
				closeAll()
			}
		}
	}()

	var wg sync.WaitGroup
	// The hostile clients start together once all are connected, and the
	// slowloris ones stop when the attack ends.
	attackStart, attackEnd := make(chan struct{}), make(chan struct{})

	// A broker without a budget may be too busy to accept: report what
	// the heap did rather than only the failed dial.
	defer func() {
		if t.Failed() {
			t.Logf("peak heap %d MiB, %d MiB over idle", peak.Load()>>20, (peak.Load()-idle)>>20)
		}
	}()

	// Fetchers that never read.
	for range 20 {
		rc := dialBad(t, e.b.Addr)
		if tc, ok := rc.c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 10)
		}
		mu.Lock()
		conns = append(conns, rc.c)
		mu.Unlock()
		frames := memFetchFrames(rc, 100)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The broker stops reading once it holds enough for this
			// connection: the write then blocks until the attack ends.
			<-attackStart
			rc.c.SetWriteDeadline(time.Now().Add(memAttack))
			rc.c.Write(frames)
		}()
	}
	// Slowloris: 100 MB produce frames, 256 KiB every 100 ms per
	// connection (50 MB/s in all, were the broker to read them all).
	for range 20 {
		rc := dialBad(t, e.b.Addr)
		mu.Lock()
		conns = append(conns, rc.c)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-attackStart
			rc.c.SetWriteDeadline(time.Now().Add(memLargeWait))
			if _, err := rc.c.Write(memSlowlorisHeader(100 << 20)); err != nil {
				return
			}
			chunk := make([]byte, 256<<10)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-attackEnd:
					return
				case <-tick.C:
				}
				if _, err := rc.c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}

	// Meanwhile a normal client is served and the broker stays
	// registered.
	attackCtx, attackCancel := context.WithTimeout(ctx, memAttack)
	defer attackCancel()
	close(attackStart)

	// And a normal 1 MB produce, sent once the attack fills the budget,
	// is answered while the attack goes on (the attackers' frames
	// trickle in, each at 2.5 MB/s: they must not keep it waiting). On an
	// idle machine it is answered in about a StallTimeout (10 s: the
	// slowloris holding the overdraft loses it then); on a loaded one
	// (the race detector beside the container tests) that has taken
	// longer than the 20 s attack, so the slowloris clients keep at it
	// until the produce is answered or memLargeWait has passed: a broker
	// that starves it still fails.
	largeCtx, largeCancel := context.WithTimeout(ctx, memLargeWait)
	defer largeCancel()
	largeDone := make(chan error, 1)
	go func() {
		budget := e.b.RequestBudget()
		for budget.Waiting() == 0 || budget.Used() < budget.Limit() {
			select {
			case <-attackCtx.Done():
				largeDone <- errors.New("the attack never filled the budget")
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		rc, err := net.DialTimeout("tcp", e.b.Addr, badTimeout)
		if err != nil {
			largeDone <- err
			return
		}
		defer rc.Close()
		go func() { <-largeCtx.Done(); rc.Close() }()
		id := "large-produce"
		req := badProduceRequest(1, badPart{memTopic, 0, badBatch(memRecordsPerBatch, 1024)})
		frame := protocol.AppendRequest(nil, req, 1, &id)
		start := time.Now()
		if _, err := rc.Write(frame); err != nil {
			largeDone <- fmt.Errorf("sending: %w", err)
			return
		}
		resp, err := protocol.ReadResponse(rc, 1<<20)
		if err != nil {
			largeDone <- fmt.Errorf("reading its response: %w", err)
			return
		}
		pr := req.ResponseKind()
		pr.SetVersion(req.GetVersion())
		if _, err := protocol.DecodeResponse(resp, pr); err != nil {
			largeDone <- err
			return
		}
		if codes := badProduceCodes(pr); len(codes) != 1 || codes[0] != 0 {
			largeDone <- fmt.Errorf("error codes %v", codes)
			return
		}
		t.Logf("a %d-byte produce sent during the attack was answered in %v", len(frame), time.Since(start).Round(time.Millisecond))
		largeDone <- nil
	}()
	served := 0
	for attackCtx.Err() == nil {
		e.checkHealthy(t)
		mctx, mcancel := context.WithTimeout(ctx, badTimeout)
		md, err := e.adm.BrokerMetadata(mctx)
		mcancel()
		if err != nil {
			t.Fatalf("metadata during the attack: %v", err)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].NodeID != e.b.NodeID() {
			t.Fatalf("metadata during the attack lists brokers %v, want node %d registered", md.Brokers, e.b.NodeID())
		}
		served++
		select {
		case <-attackCtx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := <-largeDone; err != nil {
		t.Errorf("a 1 MB produce during the attack: %v", err)
	}
	close(attackEnd)
	grew := peak.Load() - idle
	closeAll()
	wg.Wait()
	close(stop)
	<-samplerDone
	t.Logf("peak heap %d MiB, %d MiB over idle; %d health checks during the attack; at most %d MiB of the %d MiB request budget in use",
		peak.Load()>>20, grew>>20, served, peakUsed.Load()>>20, e.b.RequestBudget().Limit()>>20)
	bound := int64(memBound)
	if raceEnabled {
		bound = memBoundRace
	}
	if grew > bound {
		t.Errorf("heap grew %d MiB over its idle figure, want at most %d MiB", grew>>20, bound>>20)
	}
	// What the budget accounts for: its limit, one frame over it (the
	// overdraft), and per fetching connection 1 MiB and a batch of about
	// 1 MB beyond what was free (see internal/protocol's doc).
	budget := e.b.RequestBudget()
	if most := budget.Limit() + protocol.DefaultMaxRequestBytes + 20*(2<<20); peakUsed.Load() > most {
		t.Errorf("%d MiB of the request budget in use, want at most %d MiB", peakUsed.Load()>>20, most>>20)
	}
	if served < 1 {
		t.Errorf("no health check passed during the attack")
	}

	// Once the hostile connections are gone, the broker returns to its
	// idle figure.
	// (A forced collection every half second, not WaitFor's 20 ms: back
	// to back they would starve the in-process etcd under the race
	// detector.)
	e.checkHealthy(t)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		runtime.GC()
		h := memHeapBytes()
		if h-idle <= 64<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heap %d MiB over idle 30 s after the attack", (h-idle)>>20)
		}
	}
}
