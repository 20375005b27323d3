package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// expectedFrame is what the server must send for body: correlation id, a
// tag byte for flexible headers, the body.
func expectedFrame(correlationID int32, flexibleHeader bool, body kmsg.Response) []byte {
	b := kbin.AppendInt32(nil, correlationID)
	if flexibleHeader {
		b = append(b, 0)
	}
	return body.AppendTo(b)
}

func TestApiVersionsRoundTrip(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	for v := int16(0); v <= 3; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = v
			req.ClientSoftwareName = "samsa-test"
			req.ClientSoftwareVersion = "0.1"
			corr := int32(100 + v)
			c.send(req, corr)
			got := c.recvFrame()

			// ApiVersions response headers never carry tags, even at
			// v3 where the body is flexible.
			want := expectedFrame(corr, false, apiVersionsResponse(&Request{Body: req}))
			if !bytes.Equal(got, want) {
				t.Fatalf("response frame\n got %x\nwant %x", got, want)
			}
			h.mu.Lock()
			seen := h.seen[len(h.seen)-1]
			h.mu.Unlock()
			if seen.Version != v || seen.CorrelationID != corr || seen.ClientID == nil || *seen.ClientID != testClientID || seen.UnsupportedVersion != 0 {
				t.Fatalf("handler saw version %d corr %d client %v unsupported %d", seen.Version, seen.CorrelationID, seen.ClientID, seen.UnsupportedVersion)
			}
			// v3's flexible request header puts tags between the
			// client id and the body; a misparse shifts these.
			if body := seen.Body.(*kmsg.ApiVersionsRequest); v >= 3 && (body.ClientSoftwareName != "samsa-test" || body.ClientSoftwareVersion != "0.1") {
				t.Fatalf("v3 body decoded as %q %q", body.ClientSoftwareName, body.ClientSoftwareVersion)
			}
		})
	}
}

func TestApiVersionsUnsupportedVersion(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	for _, v := range []int16{4, 5, 99, 32767} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = min(v, req.MaxVersion()) // kmsg cannot encode v99; the header says v.
			frame := AppendRequest(nil, req, 7, &testClientID)
			binary.BigEndian.PutUint16(frame[6:], uint16(v))
			c.write(frame)
			got := c.recvFrame()

			resp := kmsg.NewPtrApiVersionsResponse() // v0
			if corr, err := DecodeResponse(got, resp); err != nil || corr != 7 {
				t.Fatalf("decode v0 response: corr %d, %v", corr, err)
			}
			if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 3 {
				t.Fatalf("got error %d keys %+v, want UNSUPPORTED_VERSION and ApiVersions 0..3", resp.ErrorCode, resp.ApiKeys)
			}
			if want := expectedFrame(7, false, resp); !bytes.Equal(got, want) {
				t.Fatalf("frame is not a v0 encoding\n got %x\nwant %x", got, want)
			}
			h.mu.Lock()
			seen := h.seen[len(h.seen)-1]
			h.mu.Unlock()
			if seen.Version != 0 || seen.Body.GetVersion() != 0 || seen.UnsupportedVersion != v {
				t.Fatalf("handler saw version %d body version %d unsupported %d, want 0 0 %d", seen.Version, seen.Body.GetVersion(), seen.UnsupportedVersion, v)
			}
		})
	}
	// The client downgrades on the same connection, as clients do.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if resp := c.roundTrip(req, 8).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("v3 after downgrade: error %d", resp.ErrorCode)
	}
}

func TestMetadataHeaderFlexibility(t *testing.T) {
	_, addr := startServer(t, Config{}, &testHandler{})
	c := dialRaw(t, addr)
	for _, v := range []int16{0, 1, 8, 9, 12} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			req := metadataRequest(v, "a", "b")
			c.send(req, int32(v))
			got := c.recvFrame()
			resp := req.ResponseKind().(*kmsg.MetadataResponse)
			if _, err := DecodeResponse(got, resp); err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 2 || *resp.Topics[1].Topic != "b" {
				t.Fatalf("topics %+v", resp.Topics)
			}
			want := expectedFrame(int32(v), v >= 9, resp)
			if !bytes.Equal(got, want) {
				t.Fatalf("frame\n got %x\nwant %x", got, want)
			}
		})
	}
}

// TestPipelinedInOrder sends requests back to back; the first one's Later
// is held until every request has been handled and the later ones' answers
// are ready, and the answers must still come in request order.
func TestPipelinedInOrder(t *testing.T) {
	release := make(chan struct{})
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		body := metadataResponse(req, req.Body.(*kmsg.MetadataRequest))
		switch topicOf(req) {
		case "slow":
			return Response{Later: func() kmsg.Response {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return body
			}}, true
		case "quick-later":
			return Response{Later: func() kmsg.Response { return body }}, true
		}
		return Response{}, false
	}
	_, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	topics := []string{"slow", "quick-later", "fast", "slow", "fast"}
	for i, topic := range topics {
		c.send(metadataRequest(9, topic), int32(i))
	}
	waitFor(t, ioTimeout, func() error {
		if n := h.handled(); n != len(topics) {
			return fmt.Errorf("%d of %d handled", n, len(topics))
		}
		return nil
	})
	close(release)
	for i, topic := range topics {
		resp := metadataRequest(9).ResponseKind()
		if corr := c.recv(resp); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		if got := *resp.(*kmsg.MetadataResponse).Topics[0].Topic; got != topic {
			t.Fatalf("response %d is for %q, want %q", i, got, topic)
		}
	}
}

func TestNoResponse(t *testing.T) {
	var laterCalled atomic.Bool
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		switch topicOf(req) {
		case "none":
			return Response{NoResponse: true}, true
		case "none-later":
			body := metadataResponse(req, req.Body.(*kmsg.MetadataRequest))
			return Response{NoResponse: true, Later: func() kmsg.Response {
				laterCalled.Store(true)
				return body
			}}, true
		}
		return Response{}, false
	}
	_, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	for i, topic := range []string{"none", "a", "none-later", "b"} {
		c.send(metadataRequest(1, topic), int32(i))
	}
	for _, want := range []struct {
		corr  int32
		topic string
	}{{1, "a"}, {3, "b"}} {
		resp := metadataRequest(1).ResponseKind()
		if corr := c.recv(resp); corr != want.corr {
			t.Fatalf("correlation id %d, want %d", corr, want.corr)
		}
		if got := *resp.(*kmsg.MetadataResponse).Topics[0].Topic; got != want.topic {
			t.Fatalf("topic %q, want %q", got, want.topic)
		}
	}
	if !laterCalled.Load() {
		t.Fatal("the Later of a NoResponse request was not called before the next response")
	}
	checkConnOpen(t, c)
}

// checkConnOpen proves c is still served.
func checkConnOpen(t *testing.T, c *rawClient) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	if resp := c.roundTrip(req, 999).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error %d", resp.ErrorCode)
	}
}

func TestCloseResponse(t *testing.T) {
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		body := metadataResponse(req, req.Body.(*kmsg.MetadataRequest))
		switch topicOf(req) {
		case "close":
			return Response{Body: body, Close: true}, true
		case "close-silently":
			return Response{NoResponse: true, Close: true}, true
		}
		return Response{}, false
	}
	s, addr := startServer(t, Config{}, h)
	for _, tt := range []struct {
		name   string
		topics []string
		want   []string // responses before the close
	}{
		{"with response", []string{"a", "close", "after"}, []string{"a", "close"}},
		{"without response", []string{"a", "close-silently", "after"}, []string{"a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h.mu.Lock()
			h.seen = nil
			h.mu.Unlock()
			c := dialRaw(t, addr)
			var frames []byte
			for i, topic := range tt.topics {
				frames = AppendRequest(frames, metadataRequest(1, topic), int32(i), nil)
			}
			c.write(frames) // one write: "after" is already on its way
			for i, topic := range tt.want {
				resp := metadataRequest(1).ResponseKind()
				if corr := c.recv(resp); corr != int32(i) {
					t.Fatalf("correlation id %d, want %d", corr, i)
				}
				if got := *resp.(*kmsg.MetadataResponse).Topics[0].Topic; got != topic {
					t.Fatalf("topic %q, want %q", got, topic)
				}
			}
			c.expectClosed()
			waitFor(t, ioTimeout, func() error {
				if n := s.NumConnections(); n != 0 {
					return fmt.Errorf("%d connections open", n)
				}
				return nil
			})
			// The request after the closing one was never handled.
			if n := h.handled(); n != 2 {
				t.Fatalf("%d requests handled, want 2", n)
			}
		})
	}
}

// TestKgoClient proves the framing and headers match a real client: kgo
// negotiates ApiVersions (its first try is above our range, so it also goes
// through the v0 UNSUPPORTED_VERSION downgrade) and then sends a flexible
// Metadata request.
func TestKgoClient(t *testing.T) {
	h := &testHandler{}
	_, addr := startServer(t, Config{}, h)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("kgo-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()

	req := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, topic)
	r, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.MetadataResponse)
	if resp.Version != 12 || len(resp.Topics) != 1 || *resp.Topics[0].Topic != "orders" || len(resp.Brokers) != 1 {
		t.Fatalf("metadata v%d: topics %+v brokers %+v", resp.Version, resp.Topics, resp.Brokers)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	var versions []string
	for _, seen := range h.seen {
		versions = append(versions, fmt.Sprintf("%d/v%d/unsupported=%d", seen.Key, seen.Version, seen.UnsupportedVersion))
		if seen.ClientID == nil || *seen.ClientID != "kgo-test" {
			t.Errorf("client id %v", seen.ClientID)
		}
	}
	t.Logf("requests seen: %v", versions)
	first, last := h.seen[0], h.seen[len(h.seen)-1]
	if first.Key != 18 || first.UnsupportedVersion == 0 {
		t.Errorf("first request %s, want an ApiVersions above v3", versions[0])
	}
	if last.Key != 3 || last.Version != 12 {
		t.Errorf("last request %s, want Metadata v12", versions[len(versions)-1])
	}
	var sawV3 bool
	for _, seen := range h.seen {
		if seen.Key == 18 && seen.Version == 3 {
			sawV3 = true
			if b := seen.Body.(*kmsg.ApiVersionsRequest); b.ClientSoftwareName != "kgo" {
				t.Errorf("ApiVersions v3 client software %q, want kgo", b.ClientSoftwareName)
			}
		}
	}
	if !sawV3 {
		t.Errorf("kgo never retried ApiVersions at v3: %v", versions)
	}
}

// TestBackpressure holds every response and checks that the reader stops
// handling requests once MaxInFlight are waiting.
func TestBackpressure(t *testing.T) {
	const maxInFlight = 2
	// One handled request is held by the writer in its Later, maxInFlight
	// sit in the queue and one more is handled by the reader, which then
	// blocks on the full queue.
	const bound = maxInFlight + 2
	release := make(chan struct{})
	var handled, released, worst atomic.Int64
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		n := handled.Add(1) - released.Load()
		for {
			w := worst.Load()
			if n <= w || worst.CompareAndSwap(w, n) {
				break
			}
		}
		body := metadataResponse(req, req.Body.(*kmsg.MetadataRequest))
		return Response{Later: func() kmsg.Response {
			select {
			case <-release:
			case <-ctx.Done():
			}
			released.Add(1)
			return body
		}}, true
	}
	_, addr := startServer(t, Config{MaxInFlight: maxInFlight}, h)
	c := dialRaw(t, addr)
	const n = 10
	var frames []byte
	for i := range n {
		frames = AppendRequest(frames, metadataRequest(1, "t"), int32(i), nil)
	}
	c.write(frames)
	waitFor(t, ioTimeout, func() error {
		if got := handled.Load(); got < bound {
			return fmt.Errorf("%d handled, want %d", got, bound)
		}
		return nil
	})
	go func() {
		for range n {
			release <- struct{}{}
		}
	}()
	for i := range n {
		if corr := c.recv(metadataRequest(1).ResponseKind()); corr != int32(i) {
			t.Fatalf("correlation id %d, want %d", corr, i)
		}
	}
	if w := worst.Load(); w > bound {
		t.Fatalf("%d requests in flight at once, want at most %d", w, bound)
	}
}

func TestCloseWaitsForLater(t *testing.T) {
	laterRunning := make(chan struct{})
	var laterReturned atomic.Bool
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		return Response{Later: func() kmsg.Response {
			close(laterRunning)
			<-ctx.Done() // a long poll that only the shutdown ends
			laterReturned.Store(true)
			return nil
		}}, true
	}
	s, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	c.send(metadataRequest(1, "t"), 1)
	<-laterRunning
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !laterReturned.Load() {
		t.Fatal("Close returned before the running Later")
	}
	if n := s.NumConnections(); n != 0 {
		t.Fatalf("%d connections after Close", n)
	}
	c.expectClosed()
	// A listener handed to a closed server is closed at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln); err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Fatal("listener still open after Serve on a closed server")
	}
}

func TestMaxConnections(t *testing.T) {
	s, addr := startServer(t, Config{MaxConnections: 1}, &testHandler{})
	c1 := dialRaw(t, addr)
	checkConnOpen(t, c1)
	c2 := dialRaw(t, addr)
	c2.expectClosed()
	if n := s.NumConnections(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
	c1.nc.Close()
	waitFor(t, ioTimeout, func() error {
		if n := s.NumConnections(); n != 0 {
			return fmt.Errorf("%d connections", n)
		}
		return nil
	})
	checkServed(t, addr)
}

func TestIdleTimeoutBetweenRequests(t *testing.T) {
	s, addr := startServer(t, Config{IdleTimeout: 500 * time.Millisecond}, &testHandler{})
	c := dialRaw(t, addr)
	checkConnOpen(t, c)
	c.expectClosed()
	waitFor(t, ioTimeout, func() error {
		if n := s.NumConnections(); n != 0 {
			return fmt.Errorf("%d connections", n)
		}
		return nil
	})
}

// TestWriteTimeout: a client that stops reading must not pin the
// connection once the socket buffers are full.
func TestWriteTimeout(t *testing.T) {
	big := make([]byte, 4<<20)
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		resp := req.Body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.SASLAuthBytes = big
		return Response{Body: resp}, true
	}
	s, addr := startServer(t, Config{WriteTimeout: 200 * time.Millisecond}, h)
	c := dialRaw(t, addr)
	c.nc.(*net.TCPConn).SetReadBuffer(4096)
	req := kmsg.NewPtrSASLAuthenticateRequest()
	var frames []byte
	for i := range 8 {
		frames = AppendRequest(frames, req, int32(i), nil)
	}
	c.write(frames)
	waitFor(t, ioTimeout, func() error {
		if n := s.NumConnections(); n != 0 {
			return fmt.Errorf("%d connections; the writer is still blocked", n)
		}
		return nil
	})
}

// TestLaterObservesConnContext: closing the client cancels the context of
// its pending requests.
func TestLaterObservesConnContext(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		go func() { defer wg.Done(); <-ctx.Done() }()
		return Response{Later: func() kmsg.Response { <-ctx.Done(); return nil }}, true
	}
	s, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	c.send(metadataRequest(1, "t"), 1)
	waitFor(t, ioTimeout, func() error {
		if h.handled() != 1 {
			return fmt.Errorf("not handled yet")
		}
		return nil
	})
	// The client goes away while its request waits: the request's
	// context must end, or the Later would pin the connection.
	c.nc.Close()
	wg.Wait()
	waitFor(t, ioTimeout, func() error {
		if n := s.NumConnections(); n != 0 {
			return fmt.Errorf("%d connections", n)
		}
		return nil
	})
}

// A long poll (Response.Mute) stops the connection being read until it is
// answered: what the client pipelined behind it is neither handled nor held
// meanwhile (a review of issue 16 held a broker's whole budget in responses
// queued behind parked fetches). Other connections are served.
func TestMuteUntilLongPollAnswered(t *testing.T) {
	release := make(chan struct{})
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		if topicOf(req) != "long-poll" {
			return Response{}, false
		}
		body := metadataResponse(req, req.Body.(*kmsg.MetadataRequest))
		return Response{Mute: true, Later: func() kmsg.Response {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return body
		}}, true
	}
	_, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	c.send(metadataRequest(9, "long-poll"), 0)
	c.send(metadataRequest(9, "behind"), 1)
	waitFor(t, ioTimeout, func() error {
		if n := h.handled(); n < 1 {
			return fmt.Errorf("the long poll is not handled yet")
		}
		return nil
	})
	// Another connection is served meanwhile; its request is handled
	// after the long poll, so once it is answered the muted connection's
	// second request would have been read too, were it read at all.
	other := dialRaw(t, addr)
	other.roundTrip(metadataRequest(9, "other"), 7)
	time.Sleep(50 * time.Millisecond) // a negative check: give a wrongly unmuted reader time to handle "behind"
	h.mu.Lock()
	for _, r := range h.seen {
		if topicOf(r) == "behind" {
			h.mu.Unlock()
			t.Fatal("a request pipelined behind a long poll was handled before the long poll was answered")
		}
	}
	h.mu.Unlock()
	close(release)
	for i, topic := range []string{"long-poll", "behind"} {
		resp := metadataRequest(9).ResponseKind()
		if corr := c.recv(resp); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		if got := *resp.(*kmsg.MetadataResponse).Topics[0].Topic; got != topic {
			t.Fatalf("response %d is for %q, want %q", i, got, topic)
		}
	}
}
