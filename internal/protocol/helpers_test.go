package protocol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ioTimeout bounds every blocking read or write in the tests. It is a safety
// net against hangs, never what a test waits for.
const ioTimeout = 10 * time.Second

// testVersions is the version table of the test servers, the ranges
// PROTOCOL.md asks a broker to advertise.
var testVersions = map[int16][2]int16{
	0:  {3, 9},  // Produce
	1:  {4, 12}, // Fetch
	3:  {0, 12}, // Metadata
	18: {0, 3},  // ApiVersions
	36: {0, 2},  // SaslAuthenticate, for big responses
}

func testVersionsFunc(key int16) (int16, int16, bool) {
	v, ok := testVersions[key]
	return v[0], v[1], ok
}

// waitFor polls cond until it returns nil, failing the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLogger returns a logger that writes to the test log when -v is given
// and discards otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// startServer serves h on a fresh 127.0.0.1 listener and closes the server
// when the test ends, checking that Serve returned nil.
func startServer(t testing.TB, cfg Config, h Handler) (*Server, string) {
	t.Helper()
	if cfg.Versions == nil {
		cfg.Versions = testVersionsFunc
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(cfg, h)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v after Close, want nil", err)
		}
	})
	return s, ln.Addr().String()
}

// rawClient speaks the protocol over a plain TCP connection.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

var testClientID = "raw-test"

func (c *rawClient) send(req kmsg.Request, correlationID int32) {
	c.t.Helper()
	c.write(AppendRequest(nil, req, correlationID, &testClientID))
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawClient) recvFrame() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	frame, err := ReadResponse(c.br, 64<<20)
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	return frame
}

// recv reads one response into resp (whose version must be set) and returns
// its correlation id.
func (c *rawClient) recv(resp kmsg.Response) int32 {
	c.t.Helper()
	corr, err := DecodeResponse(c.recvFrame(), resp)
	if err != nil {
		c.t.Fatalf("decoding response: %v", err)
	}
	return corr
}

// expectClosed fails unless the server closes the connection without
// sending anything more.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var b [1]byte
	n, err := c.br.Read(b[:])
	switch {
	case n > 0:
		c.t.Fatalf("server sent data, want the connection closed")
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		c.t.Fatalf("read: %v, want EOF or connection reset", err)
	}
}

// roundTrip sends req and decodes its response.
func (c *rawClient) roundTrip(req kmsg.Request, correlationID int32) kmsg.Response {
	c.t.Helper()
	c.send(req, correlationID)
	resp := req.ResponseKind()
	if got := c.recv(resp); got != correlationID {
		c.t.Fatalf("correlation id %d, want %d", got, correlationID)
	}
	return resp
}

// checkServed proves the server still answers a well-behaved client.
func checkServed(t testing.TB, addr string) {
	t.Helper()
	c := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "check"
	req.ClientSoftwareVersion = "1"
	resp := c.roundTrip(req, 77).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(testVersions) {
		t.Fatalf("ApiVersions: error %d, %d keys; want 0, %d", resp.ErrorCode, len(resp.ApiKeys), len(testVersions))
	}
	c.nc.Close()
}

// testHandler answers ApiVersions and Metadata as a broker would; Metadata
// topics named by the tests change its behaviour, and hook, if set, is
// called first and may answer instead.
type testHandler struct {
	hook func(ctx context.Context, req *Request) (Response, bool)

	mu sync.Mutex
	// seen records every request handled, in order.
	seen []*Request
}

func (h *testHandler) Handle(ctx context.Context, req *Request) Response {
	h.mu.Lock()
	h.seen = append(h.seen, req)
	h.mu.Unlock()
	if h.hook != nil {
		if resp, ok := h.hook(ctx, req); ok {
			return resp
		}
	}
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		return Response{Body: apiVersionsResponse(req)}
	case *kmsg.MetadataRequest:
		for _, topic := range body.Topics {
			if topic.Topic != nil && *topic.Topic == "panic" {
				panic("test handler panics as asked")
			}
		}
		return Response{Body: metadataResponse(req, body)}
	}
	panic(fmt.Sprintf("test handler got unexpected key %d", req.Key))
}

func (h *testHandler) handled() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func apiVersionsResponse(req *Request) *kmsg.ApiVersionsResponse {
	resp := req.Body.ResponseKind().(*kmsg.ApiVersionsResponse)
	keys := slices.Sorted(func(yield func(int16) bool) {
		for k := range testVersions {
			if !yield(k) {
				return
			}
		}
	})
	if req.UnsupportedVersion != 0 {
		// As Kafka (KIP-511): the error and only ApiVersions' own range.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		keys = []int16{18}
	}
	for _, k := range keys {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = k, testVersions[k][0], testVersions[k][1]
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	return resp
}

func metadataResponse(req *Request, body *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := body.ResponseKind().(*kmsg.MetadataResponse)
	host, portStr, _ := net.SplitHostPort(req.Conn.Local.String())
	port, _ := strconv.Atoi(portStr)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 1, host, int32(port)
	resp.Brokers = append(resp.Brokers, b)
	resp.ControllerID = 1
	clusterID := "protocol-test"
	resp.ClusterID = &clusterID
	for _, rt := range body.Topics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = rt.Topic
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Leader, p.Replicas, p.ISR = 1, []int32{1}, []int32{1}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func metadataRequest(version int16, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	for _, name := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
	}
	return req
}

func topicOf(req *Request) string {
	if m, ok := req.Body.(*kmsg.MetadataRequest); ok && len(m.Topics) > 0 && m.Topics[0].Topic != nil {
		return *m.Topics[0].Topic
	}
	return ""
}
