package protocol

// Holes in the memory budget found by review (issue 16).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bulkHandler answers SASLAuthenticate with n bytes and counts the
// requests handled.
type bulkHandler struct {
	n       int
	handled atomic.Int64
}

func (h *bulkHandler) Handle(_ context.Context, req *Request) Response {
	if req.Key == apiVersionsKey {
		return Response{Body: apiVersionsResponse(req)}
	}
	h.handled.Add(1)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SASLAuthBytes = make([]byte, h.n)
	return Response{Body: resp}
}

// Responses are in memory until written: a client that pipelines requests whose
// responses are large (a Metadata request's can be thousands of times its
// size) and never reads them is stopped at the connection's byte bound.
func TestBudgetResponsesCounted(t *testing.T) {
	h := &bulkHandler{n: 1 << 20}
	s, addr := startServer(t, Config{QueuedMaxBytes: 8 << 20, MaxQueuedBytesPerConnection: 4 << 20}, h)
	c := dialRaw(t, addr)
	c.nc.(*net.TCPConn).SetReadBuffer(4 << 10)
	var frames []byte
	for i := range 100 {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		frames = AppendRequest(frames, req, int32(i), &testClientID)
	}
	c.write(frames)
	time.Sleep(time.Second)
	// 4 queued, one being written, one in the socket buffers, a few
	// more while the kernel's buffers take them.
	n := h.handled.Load()
	t.Logf("handled %d of 100 pipelined requests of 1 MiB responses, never read; budget used %d MiB", n, s.budget.Used()>>20)
	if n > 20 {
		t.Errorf("handled %d requests of a connection that reads nothing, per-connection bound 4 MiB", n)
	}
}

// A client that sends part of a large frame and stalls, once granted its
// bytes, is not waiting for the budget: nothing else let other large
// frames (a follower's Fetch of thousands of partitions, a Metadata request
// for thousands of topics) through before IdleTimeout closed it. With
// StallTimeout it is closed once it stalls while others wait; the large
// request is answered either way (the overdraft, after overdraftPatience).
// Disabled, the stalled client keeps its connection and its bytes.
func TestBudgetStalledFrameClosed(t *testing.T) {
	for _, tc := range []struct {
		stall  time.Duration
		closed bool
	}{{500 * time.Millisecond, true}, {-1, false}} {
		t.Run(fmt.Sprintf("StallTimeout=%v", tc.stall), func(t *testing.T) {
			const budget = 1 << 20
			s, addr := startServer(t, Config{QueuedMaxBytes: budget, IdleTimeout: time.Minute, StallTimeout: tc.stall}, &testHandler{})
			slow := dialRaw(t, addr)
			slow.write(produceFrameHeader(90 << 20))
			slow.write(make([]byte, 600<<10)) // and then nothing more
			waitFor(t, ioTimeout, func() error {
				if u := s.budget.Used(); u < budget {
					return fmt.Errorf("used %d", u)
				}
				return nil
			})
			var topics []string
			for i := range 8000 {
				topics = append(topics, fmt.Sprintf("topic-%06d", i))
			}
			frame := AppendRequest(nil, metadataRequest(9, topics...), 1, &testClientID)
			c := dialRaw(t, addr)
			c.write(frame)
			c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
			if _, err := ReadResponse(c.br, 64<<20); err != nil {
				t.Fatalf("%d-byte Metadata request beside a stalled 600 KiB partial frame: %v", len(frame), err)
			}
			if tc.closed {
				slow.expectClosed()
				return
			}
			slow.nc.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
			var one [1]byte
			_, err := slow.br.Read(one[:])
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("stalled client with StallTimeout disabled: read %v, want its connection kept open", err)
			}
		})
	}
}

// A frame that does not fit beside what others hold waited while anything
// at all was held: a long poll parked with its 100-byte frame kept a 3 MiB
// produce (budget 1 MiB) waiting for ever. Small frames (parked requests,
// pipelined requests of clients that read nothing) are not released on
// any schedule, so a waiting reader may finish its frame over the budget
// when all that is in use is theirs and partial frames.
func TestBudgetFrameBesideParkedRequest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := &testHandler{hook: func(ctx context.Context, req *Request) (Response, bool) {
		switch body := req.Body.(type) {
		case *kmsg.ProduceRequest:
			return Response{Body: body.ResponseKind()}, true
		case *kmsg.MetadataRequest:
			return Response{Later: func() kmsg.Response {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return metadataResponse(req, body)
			}}, true
		}
		return Response{}, false
	}}
	s, addr := startServer(t, Config{QueuedMaxBytes: 1 << 20}, h)
	parked := dialRaw(t, addr)
	parked.send(metadataRequest(9, "park"), 1)
	waitFor(t, ioTimeout, func() error {
		if s.budget.Used() == 0 {
			return fmt.Errorf("not parked yet")
		}
		return nil
	})
	for _, size := range []int{1 << 20, 3 << 20} {
		c := dialRaw(t, addr)
		go c.nc.Write(produceFrame(size-100, 1))
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := ReadResponse(c.br, 1<<20); err != nil {
			t.Fatalf("a %d-byte produce (budget 1 MiB) not answered in 5s beside one parked request: %v", size, err)
		}
	}
	waitFor(t, ioTimeout, func() error {
		if u := s.budget.Used(); u > smallFrame {
			return fmt.Errorf("budget used %d once the produces are answered", u)
		}
		return nil
	})
}

// A frame of up to 64 KiB was allocated in full at its size prefix:
// clients that sent 64 KiB size prefixes and nothing more held 64 KiB
// each, whatever the budget.
func TestBudgetSmallFrameSlowloris(t *testing.T) {
	const budget = 1 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget}, &testHandler{})
	const n = 100
	for range n {
		c := dialRaw(t, addr)
		c.write(produceFrameHeader(smallFrame)) // and nothing more
	}
	waitFor(t, ioTimeout, func() error {
		if s.NumConnections() < n {
			return fmt.Errorf("%d connections", s.NumConnections())
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	if u := s.budget.Used(); u > budget {
		t.Errorf("%d connections that sent a 64 KiB size prefix and a header hold %d bytes, budget %d", n, u, budget)
	}
}

// An idle connection kept the write buffer of its last responses (up to 1
// MiB), counted nowhere.
func TestBudgetIdleWriteBuffer(t *testing.T) {
	h := HandlerFunc(func(_ context.Context, req *Request) Response {
		return Response{Later: func() kmsg.Response {
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.SASLAuthBytes = make([]byte, 900<<10)
			return resp
		}}
	})
	_, addr := startServer(t, Config{}, h)
	runtime.GC()
	before := heapLive()
	const n = 50
	for range n {
		c := dialRaw(t, addr)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		c.roundTrip(req, 1)
	}
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	grown := heapLive() - before
	t.Logf("%d idle connections after one 900 KiB response each: heap +%d KiB", n, grown>>10)
	if grown > n*300<<10 {
		t.Errorf("%d idle connections hold %d KiB more heap (%d KiB each)", n, grown>>10, grown/n>>10)
	}
}

func heapLive() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// A large frame whose request waits in a Later (an acks=all produce
// waiting for its followers) may be waiting for a follower's fetch of over
// 64 KiB (thousands of partitions) that waits for room it holds: a waiting
// reader may finish its frame over the budget beside parked frames.
func TestBudgetFrameBesideParkedLargeFrame(t *testing.T) {
	followerFetched := make(chan struct{})
	h := &testHandler{hook: func(ctx context.Context, req *Request) (Response, bool) {
		switch body := req.Body.(type) {
		case *kmsg.ProduceRequest:
			return Response{Later: func() kmsg.Response {
				select {
				case <-followerFetched:
				case <-ctx.Done():
				}
				return body.ResponseKind()
			}}, true
		case *kmsg.MetadataRequest: // the follower's large request
			close(followerFetched)
			return Response{Body: metadataResponse(req, body)}, true
		}
		return Response{}, false
	}}
	s, addr := startServer(t, Config{QueuedMaxBytes: 1 << 20}, h)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = make([]byte, 700<<10)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	producer := dialRaw(t, addr)
	producer.write(AppendRequest(nil, req, 1, nil))
	waitFor(t, ioTimeout, func() error {
		if u := s.budget.Used(); u < 700<<10 {
			return fmt.Errorf("used %d", u)
		}
		return nil
	})
	var topics []string
	for i := range 30000 {
		topics = append(topics, fmt.Sprintf("topic-%06d", i))
	}
	follower := dialRaw(t, addr)
	frame := AppendRequest(nil, metadataRequest(9, topics...), 1, &testClientID)
	go follower.nc.Write(frame)
	follower.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ReadResponse(follower.br, 64<<20); err != nil {
		t.Fatalf("a %d-byte request (budget 1 MiB) not answered in 5 s beside a parked 700 KiB produce waiting for it: %v", len(frame), err)
	}
	producer.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ReadResponse(producer.br, 1<<20); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// rawProduceRequest is a Produce v9 request (acks=1) of size zero bytes of
// records for topic "t".
func rawProduceRequest(size int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = make([]byte, size)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	return req
}

// produceFrame is rawProduceRequest(size) as a request frame.
func produceFrame(size int, correlationID int32) []byte {
	return AppendRequest(nil, rawProduceRequest(size), correlationID, nil)
}

// produceAnswerer answers every Produce request at once.
func produceAnswerer() *testHandler {
	return &testHandler{hook: func(_ context.Context, req *Request) (Response, bool) {
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok {
			return Response{Body: p.ResponseKind()}, true
		}
		return Response{}, false
	}}
}

// trickle writes chunk bytes every interval to c until the write fails or
// stop is closed, and returns how many it wrote once it stopped.
func trickle(c *rawClient, chunk int, interval time.Duration, stop <-chan struct{}) <-chan int {
	sent := make(chan int, 1)
	go func() {
		n := 0
		defer func() { sent <- n }()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
			m, err := c.nc.Write(make([]byte, chunk))
			n += m
			if err != nil {
				return
			}
		}
	}()
	return sent
}

// A client whose 90 MB frame trickles in got the overdraft when its
// partial frame filled the budget, and kept it while it trickled: a
// 1 MiB produce from another client waited until the 90 MB had arrived.
// Now the overdraft goes to the waiting frame with the fewest bytes left,
// and one that does not finish its frame within StallTimeout of getting
// it while others wait is closed.
func TestBudgetTrickleDoesNotStarve(t *testing.T) {
	const budget = 1 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget, IdleTimeout: time.Minute, StallTimeout: 500 * time.Millisecond}, produceAnswerer())
	slow := dialRaw(t, addr)
	slow.write(produceFrameHeader(90 << 20))
	slow.write(make([]byte, budget)) // fills the budget and wants more
	// Alone, it gets the overdraft and takes its next step beyond the
	// budget. Had the other client been waiting before then, the other
	// (with the fewer bytes left) would have got the overdraft first and
	// nothing would have been left to close the trickler for.
	waitFor(t, ioTimeout, func() error {
		if u := s.budget.Used(); u <= budget {
			return fmt.Errorf("used %d, the trickler has no overdraft yet", u)
		}
		return nil
	})
	// 128 KiB every 100 ms: well over the 64 KiB per StallTimeout that
	// used to keep a frame open, far under what 90 MB in 500 ms needs.
	stop := make(chan struct{})
	defer close(stop)
	trickle(slow, 128<<10, 100*time.Millisecond, stop)

	c := dialRaw(t, addr)
	frame := produceFrame(1<<20, 7)
	go c.nc.Write(frame)
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	if _, err := ReadResponse(c.br, 1<<20); err != nil {
		t.Fatalf("a %d-byte produce beside a trickling 90 MB frame (budget %d): %v", len(frame), budget, err)
	}
	slow.expectClosed()
}

// A frame granted a step of its buffer that then trickles in, at 64 KiB
// per StallTimeout or more but slower than the step needs, kept the bytes
// it was granted for as long as it trickled. While others wait, a large
// frame must now fill each step within StallTimeout of being granted it.
func TestBudgetSlowStepClosed(t *testing.T) {
	const budget = 1 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget, IdleTimeout: time.Minute, StallTimeout: 500 * time.Millisecond}, produceAnswerer())
	slow := dialRaw(t, addr)
	slow.write(produceFrameHeader(90 << 20))
	// 700 KiB: the buffer is 1 MiB (the whole budget) with 324 KiB of
	// the step still to come.
	const sentFirst = 700 << 10
	slow.write(make([]byte, sentFirst))
	waitFor(t, ioTimeout, func() error {
		if u := s.budget.Used(); u < budget {
			return fmt.Errorf("used %d", u)
		}
		return nil
	})
	// Another client's frame waits for room.
	other := dialRaw(t, addr)
	go other.nc.Write(produceFrame(1<<20, 1))
	waitFor(t, ioTimeout, func() error {
		if n := s.budget.Waiting(); n == 0 {
			return errors.New("nobody waits for the budget")
		}
		return nil
	})
	// 64 KiB every 400 ms: 64 KiB per StallTimeout or more, but the
	// step's last 324 KiB take 2 s.
	stop := make(chan struct{})
	sent := trickle(slow, 64<<10, 400*time.Millisecond, stop)
	slow.expectClosed()
	close(stop)
	if n := <-sent; sentFirst+n >= budget {
		t.Fatalf("the trickling client sent its whole step (%d bytes) before it was closed", sentFirst+n)
	}
	other.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	if _, err := ReadResponse(other.br, 1<<20); err != nil {
		t.Fatalf("the waiting produce: %v", err)
	}
}

// parkHandler answers Produce at once, and parks a Metadata request whose
// first topic starts with "park" as a long poll (Mute, answered when its
// context ends), like a Fetch with a large MaxWaitMillis.
func parkHandler() *testHandler {
	return &testHandler{hook: func(ctx context.Context, req *Request) (Response, bool) {
		switch body := req.Body.(type) {
		case *kmsg.ProduceRequest:
			return Response{Body: body.ResponseKind()}, true
		case *kmsg.MetadataRequest:
			if t := topicOf(req); len(t) >= 4 && t[:4] == "park" {
				return Response{Mute: true, Later: func() kmsg.Response {
					<-ctx.Done()
					return metadataResponse(req, body)
				}}, true
			}
		}
		return Response{}, false
	}}
}

// parkFrame is a long poll of about 14 bytes per topic.
func parkFrame(topics int) []byte {
	names := []string{"park"}
	for i := range topics {
		names = append(names, fmt.Sprintf("topic-%06d", i))
	}
	return AppendRequest(nil, metadataRequest(9, names...), 1, &testClientID)
}

// A long poll that got the overdraft and then parked kept what it took
// beyond the limit counted as overdrawn until it ended, which can be days
// (MaxWaitMillis is not capped): no other reader got the overdraft after
// waiting meanwhile, and a 1 MiB produce waited for the long polls.
// (Found by review.)
func TestBudgetParkedOverdraftForgiven(t *testing.T) {
	const budget = 1 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget, IdleTimeout: time.Minute, StallTimeout: 500 * time.Millisecond}, parkHandler())
	a := dialRaw(t, addr)
	a.write(parkFrame(50000)) // about 700 KiB: fits, and parks
	waitFor(t, ioTimeout, func() error {
		if u := s.budget.Used(); u < 600<<10 {
			return fmt.Errorf("used %d", u)
		}
		return nil
	})
	b := dialRaw(t, addr)
	b.write(parkFrame(25000)) // about 350 KiB: waits, gets the overdraft after a second, parks
	waitFor(t, ioTimeout, func() error {
		if u, n := s.budget.Used(), s.budget.Waiting(); u <= budget || n > 0 {
			return fmt.Errorf("used %d, %d waiting", u, n)
		}
		return nil
	})
	c := dialRaw(t, addr)
	go c.nc.Write(produceFrame(1<<20, 7))
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	if _, err := ReadResponse(c.br, 1<<20); err != nil {
		t.Fatalf("a 1 MiB produce beside two parked long polls over the budget: %v", err)
	}
}

// The overdraft went to the waiter with the fewest bytes left however long
// the others had waited: a stream of 80 KiB requests kept a 1 MiB produce
// waiting for ever. Each second waited now counts as 1 MiB fewer left.
// (Found by review.)
func TestBudgetOverdraftAges(t *testing.T) {
	const budget = 1 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget, IdleTimeout: time.Minute, StallTimeout: 500 * time.Millisecond}, parkHandler())
	s.budget.Charge(budget) // held, not stuck (responses a client reads slowly)
	defer s.budget.Release(budget)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var names []string
	for i := range 8000 {
		names = append(names, fmt.Sprintf("t-%06d", i))
	}
	frame := AppendRequest(nil, metadataRequest(9, names...), 1, &testClientID) // about 80 KiB
	done := make(chan struct{})
	for range 8 { // 8 connections, two requests in flight each
		h := dialRaw(t, addr)
		h.write(frame)
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				h.nc.SetDeadline(time.Now().Add(ioTimeout))
				if _, err := h.nc.Write(frame); err != nil {
					return
				}
				if _, err := ReadResponse(h.br, 64<<20); err != nil {
					return
				}
			}
		}()
	}
	waitFor(t, ioTimeout, func() error {
		if s.budget.Waiting() == 0 {
			return errors.New("nobody waits for the budget")
		}
		return nil
	})
	c := dialRaw(t, addr)
	go c.nc.Write(produceFrame(1<<20, 7))
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	_, err := ReadResponse(c.br, 1<<20)
	cancel()
	for range 8 {
		<-done
	}
	if err != nil {
		t.Fatalf("a 1 MiB produce beside a stream of 80 KiB requests (patience 1 s): %v", err)
	}
}

// While a long poll muted its connection, the reader read nothing and so
// did not see the client close: the poll ran to its end, holding the
// connection, its limits' slots and its bytes; and once fixed, it still
// stopped watching the socket after the client pipelined a request behind
// the long poll. (Both found by review.)
func TestMutedConnectionNoticesClose(t *testing.T) {
	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.Version = 3
	apiVersions.ClientSoftwareName, apiVersions.ClientSoftwareVersion = "x", "1"
	poll := AppendRequest(nil, metadataRequest(9, "park"), 1, &testClientID)
	for name, frames := range map[string][]byte{
		"long poll alone":               poll,
		"a request pipelined behind it": append(poll, AppendRequest(nil, apiVersions, 2, &testClientID)...),
	} {
		t.Run(name, func(t *testing.T) {
			s, addr := startServer(t, Config{}, parkHandler())
			c := dialRaw(t, addr)
			c.write(frames)
			waitFor(t, ioTimeout, func() error {
				if s.NumConnections() != 1 || s.budget.Used() == 0 {
					return errors.New("long poll not parked yet")
				}
				return nil
			})
			c.nc.Close()
			waitFor(t, ioTimeout, func() error {
				if n := s.NumConnections(); n != 0 {
					return fmt.Errorf("%d connections after the client closed during a muted long poll", n)
				}
				return nil
			})
		})
	}
}

// parkAllHandler is parkHandler, and also parks acks=all produce requests
// (not muted), as a leader waits for its followers.
func parkAllHandler() *testHandler {
	ph := parkHandler()
	return &testHandler{hook: func(ctx context.Context, req *Request) (Response, bool) {
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok && p.Acks == -1 {
			return Response{Later: func() kmsg.Response {
				<-ctx.Done()
				return p.ResponseKind()
			}}, true
		}
		return ph.hook(ctx, req)
	}}
}

// A long poll parked behind a parked acks=all produce read over the budget
// forgave the produce's excess too, so the next connection's produce got
// the overdraft beside it, one more per connection. (Found by review.)
func TestBudgetForgivesOnlyTheParkedFrame(t *testing.T) {
	const budget = 1 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget, IdleTimeout: time.Minute}, parkAllHandler())
	acksAll := func() []byte {
		req := rawProduceRequest(3 << 20)
		req.Acks = -1
		return AppendRequest(nil, req, 1, nil)
	}
	a := dialRaw(t, addr)
	a.write(acksAll())
	a.write(parkFrame(0))
	waitFor(t, ioTimeout, func() error {
		if u, n := s.budget.Used(), s.budget.Waiting(); u < 3<<20 || n > 0 {
			return fmt.Errorf("used %d, %d waiting", u, n)
		}
		return nil
	})
	b := dialRaw(t, addr)
	go b.nc.Write(acksAll())
	// The second produce waits (it does not fit, and nothing the first
	// holds is stuck for a produce), past overdraftPatience.
	waitFor(t, ioTimeout, func() error {
		if s.budget.Waiting() == 0 {
			return errors.New("the second produce does not wait")
		}
		return nil
	})
	deadline := time.Now().Add(2 * overdraftPatience)
	for time.Now().Before(deadline) {
		if u := s.budget.Used(); u > 4<<20 {
			t.Fatalf("a second parked 3 MiB produce read over a 1 MiB budget: %d MiB in use", u>>20)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With IdleTimeout disabled, the read deadline readFrame's stall checks
// set stayed after a large frame: the connection was closed once quiet for
// StallTimeout. (Found by review.)
func TestStallDeadlineClearedWithoutIdleTimeout(t *testing.T) {
	_, addr := startServer(t, Config{IdleTimeout: -1, StallTimeout: 200 * time.Millisecond}, produceAnswerer())
	c := dialRaw(t, addr)
	c.write(produceFrame(100<<10, 1))
	c.recvFrame()
	time.Sleep(500 * time.Millisecond) // quiet for longer than StallTimeout: the point of the test
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "x", "1"
	c.roundTrip(req, 2)
}

// With StallTimeout disabled, the time a frame waited for the budget still
// counted towards IdleTimeout. (Found by review.)
func TestBudgetWaitNotIdleWithoutStallTimeout(t *testing.T) {
	const budget = 1 << 20
	s, addr := startServer(t, Config{QueuedMaxBytes: budget, IdleTimeout: 300 * time.Millisecond, StallTimeout: -1}, produceAnswerer())
	s.budget.Charge(budget) // the overdraft comes after overdraftPatience, past IdleTimeout
	defer s.budget.Release(budget)
	c := dialRaw(t, addr)
	c.write(produceFrame(200<<10, 1))
	c.recvFrame()
}
