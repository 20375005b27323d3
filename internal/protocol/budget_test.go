package protocol

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBudgetAccounting(t *testing.T) {
	b := NewBudget(100)
	if !b.TryAcquire(60) || b.TryAcquire(41) || !b.TryAcquire(40) {
		t.Fatalf("TryAcquire: used %d after 60 ok, 41 refused, 40 ok", b.Used())
	}
	b.Release(30)
	if !b.TryAcquire(30) || b.TryAcquire(1) {
		t.Fatalf("TryAcquire with 30 free: used %d after 30 ok, 1 refused", b.Used())
	}
	b.Charge(25) // over the limit: counted anyway
	if u := b.Used(); u != 125 {
		t.Fatalf("used %d, want 125", u)
	}
	b.Release(125)
	// One item larger than the whole budget passes when nothing else is
	// in use, and only then.
	if !b.TryAcquire(500) || b.TryAcquire(1) {
		t.Fatalf("oversized item: used %d", b.Used())
	}
	b.Release(500)

	var nilBudget *Budget
	if !nilBudget.TryAcquire(1<<40) || nilBudget.acquire(context.Background(), 1, 0, 1, nil, true) != nil {
		t.Fatal("a nil budget refused")
	}
	nilBudget.Release(1)
	nilBudget.Charge(1)
}

// TestBudgetAcquireWaits: a reader waits for room, and gets it when bytes
// are released; one whose context ends stops waiting.
func TestBudgetAcquireWaits(t *testing.T) {
	b := NewBudget(100)
	b.Charge(100) // held by a response being written
	r1, r2 := &conn{}, &conn{}
	done := make(chan error, 1)
	go func() { done <- b.acquire(context.Background(), 50, 10, 100, r1, true) }()
	select {
	case err := <-done:
		t.Fatalf("acquire returned %v on a full budget", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.Release(60)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- b.acquire(ctx, 50, 10, 100, r2, true) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("acquire returned nil after its context was cancelled on a full budget")
	}
}

// TestBudgetOverdraft: when every byte in use belongs to partial frames of
// waiting readers, one of them gets to finish its frame over the budget,
// and only one.
func TestBudgetOverdraft(t *testing.T) {
	b := NewBudget(100)
	r1, r2 := &conn{}, &conn{}
	b.Charge(50) // r1's partial frame
	b.Charge(50) // r2's
	var got [2]chan error
	for i, r := range []*conn{r1, r2} {
		got[i] = make(chan error, 1)
		go func() { got[i] <- b.acquire(context.Background(), 50, 50, 200, r, true) }()
	}
	var first int
	select {
	case err := <-got[0]:
		first = 0
		if err != nil {
			t.Fatal(err)
		}
	case err := <-got[1]:
		first = 1
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("two readers whose partial frames fill the budget wait for ever")
	}
	other := 1 - first
	winner := []*conn{r1, r2}[first]
	// The overdraft reader goes on without waiting; the other waits.
	if err := b.acquire(context.Background(), 100, 100, 200, winner, true); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got[other]:
		t.Fatalf("second reader got past the budget too (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	// The winner's frame is read, handled and answered.
	b.frameDone(winner)
	b.Release(200)
	if err := <-got[other]; err != nil {
		t.Fatal(err)
	}
}

// produceFrameHeader is the start of a Produce v9 frame whose size prefix
// claims size bytes (the rest never comes).
func produceFrameHeader(size int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint16(b, 0) // Produce
	b = binary.BigEndian.AppendUint16(b, 9)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	return append(b, 0)                          // header tags
}

// TestFrameGrowsAsBytesArrive: a client that claims a 90 MB frame and
// sends a few kilobytes holds only a small buffer, not 90 MB; many such
// clients hold no more than the budget between them and do not stop a
// well-behaved client.
func TestFrameGrowsAsBytesArrive(t *testing.T) {
	const budget = 8 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget}, &testHandler{})
	var clients []*rawClient
	for range 10 {
		c := dialRaw(t, addr)
		c.write(produceFrameHeader(90 << 20))
		clients = append(clients, c)
	}
	// Two of them send 6 MB each: the budget lets one have it (the
	// other waits, TCP pushing back), not both.
	for _, c := range clients[:2] {
		go func() {
			c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
			c.nc.Write(make([]byte, 6<<20))
		}()
	}
	time.Sleep(500 * time.Millisecond)
	if used := s.budget.Used(); used > budget+smallFrame {
		t.Fatalf("budget used %d bytes for 10 partial 90 MB frames, want at most %d", used, budget+smallFrame)
	}
	checkServed(t, addr)
	for _, c := range clients {
		c.nc.Close()
	}
	waitFor(t, ioTimeout, func() error {
		if used := s.budget.Used(); used != 0 {
			return fmt.Errorf("budget used %d bytes after every client left", used)
		}
		return nil
	})
}

// TestBudgetLargeFramesNoDeadlock: more large frames than the budget holds,
// sent at once by several clients, are all read and answered.
func TestBudgetLargeFramesNoDeadlock(t *testing.T) {
	s, addr := startServer(t, Config{QueuedMaxBytes: 1 << 20}, produceAnswerer())
	req := rawProduceRequest(3 << 20)

	var wg sync.WaitGroup
	var answered atomic.Int64
	for range 4 {
		c := dialRaw(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var frames []byte
			for i := range 3 {
				frames = AppendRequest(frames, req, int32(i), nil)
			}
			go c.nc.Write(frames)
			for range 3 {
				resp := req.ResponseKind()
				resp.SetVersion(9)
				c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
				frame, err := ReadResponse(c.br, 1<<20)
				if err != nil {
					t.Errorf("reading a produce response: %v", err)
					return
				}
				if _, err := DecodeResponse(frame, resp); err != nil {
					t.Errorf("decoding a produce response: %v", err)
					return
				}
				answered.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := answered.Load(); n != 12 {
		t.Fatalf("%d of 12 produce requests answered", n)
	}
	waitFor(t, ioTimeout, func() error {
		if used := s.budget.Used(); used != 0 {
			return fmt.Errorf("budget used %d bytes after every response", used)
		}
		return nil
	})
}

// TestQueuedBytesPerConnection: a client that pipelines requests with
// large responses and does not read them stops being read from once its
// connection holds MaxQueuedBytesPerConnection; reading them lets it go on.
func TestQueuedBytesPerConnection(t *testing.T) {
	const perConn = 4 << 20
	const respBytes = 1 << 20
	var handled atomic.Int64
	h := &testHandler{hook: func(_ context.Context, req *Request) (Response, bool) {
		if _, ok := req.Body.(*kmsg.SASLAuthenticateRequest); !ok {
			return Response{}, false
		}
		handled.Add(1)
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.SASLAuthBytes = make([]byte, respBytes)
		return Response{Body: resp}, true
	}}
	s, addr := startServer(t, Config{MaxQueuedBytesPerConnection: perConn}, h)
	c := dialRaw(t, addr)
	const n = 50
	var frames []byte
	for i := range n {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		frames = AppendRequest(frames, req, int32(i), nil)
	}
	c.write(frames)
	// Kernel buffers take a few responses; the rest must wait unread.
	time.Sleep(500 * time.Millisecond)
	// The connection's bytes, and what socket buffers hold (up to a few
	// MiB each way on Linux).
	bound := int64(perConn/respBytes + 1 + 16)
	if got := handled.Load(); got > bound {
		t.Fatalf("%d requests handled while the client reads nothing, want at most %d", got, bound)
	}
	if used := s.budget.Used(); used > perConn+respBytes {
		t.Fatalf("connection holds %d bytes, want at most %d", used, perConn+respBytes)
	}
	for i := range n {
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.SetVersion(2)
		if corr := c.recv(resp); corr != int32(i) {
			t.Fatalf("correlation id %d, want %d", corr, i)
		}
	}
	if got := handled.Load(); got != n {
		t.Fatalf("%d handled, want %d", got, n)
	}
}

func TestMaxConnectionsPerIP(t *testing.T) {
	s, addr := startServer(t, Config{MaxConnectionsPerIP: 2}, &testHandler{})
	c1, c2 := dialRaw(t, addr), dialRaw(t, addr)
	checkConnOpen(t, c1)
	checkConnOpen(t, c2)
	dialRaw(t, addr).expectClosed()
	c1.nc.Close()
	waitFor(t, ioTimeout, func() error {
		if n := s.NumConnections(); n != 1 {
			return fmt.Errorf("%d connections", n)
		}
		return nil
	})
	checkServed(t, addr)

	// An override for 127.0.0.1 replaces the limit; 0 allows none.
	_, addr = startServer(t, Config{MaxConnectionsPerIP: 1, MaxConnectionsPerIPOverrides: map[string]int{"127.0.0.1": 3}}, &testHandler{})
	for range 3 {
		checkConnOpen(t, dialRaw(t, addr))
	}
	dialRaw(t, addr).expectClosed()
	_, addr = startServer(t, Config{MaxConnectionsPerIPOverrides: map[string]int{"127.0.0.1": 0}}, &testHandler{})
	dialRaw(t, addr).expectClosed()
}
