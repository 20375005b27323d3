package protocol

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"github.com/samsa-io/samsa/internal/testutil"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Review probes of the SASL gate (sasl.go, readLoop). A fake PLAIN-like
// mechanism: "\x00user\x00ok" authenticates user; anything else fails.

type reviewSASL struct{}

func (reviewSASL) Mechanisms() []string { return []string{"PLAIN"} }
func (reviewSASL) Start(m string) (SASLSession, bool) {
	if m != "PLAIN" {
		return nil, false
	}
	return &reviewSession{}, true
}

type reviewSession struct {
	done bool
	user string
}

func (s *reviewSession) Step(_ context.Context, msg []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, errors.New("already done")
	}
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || string(parts[2]) != "ok" || len(parts[1]) == 0 {
		return nil, false, errors.New("invalid credentials")
	}
	s.done, s.user = true, string(parts[1])
	return nil, true, nil
}
func (s *reviewSession) User() string { return s.user }

var reviewVersions = map[int16][2]int16{3: {0, 12}, 17: {0, 1}, 18: {0, 3}, 36: {0, 2}}

// reviewHandler records the keys and principals it is given.
type reviewHandler struct {
	mu   sync.Mutex
	keys []int16
	prin []string
}

func (h *reviewHandler) Handle(_ context.Context, req *Request) Response {
	h.mu.Lock()
	h.keys = append(h.keys, req.Key)
	h.prin = append(h.prin, req.Conn.Principal)
	h.mu.Unlock()
	if req.Key == apiVersionsKey {
		return Response{Body: apiVersionsResponse(req)}
	}
	resp := req.Body.ResponseKind()
	return Response{Body: resp}
}

func (h *reviewHandler) saw(key int16) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.keys {
		if k == key {
			return true
		}
	}
	return false
}

func startSASLServer(t *testing.T, lis Listener, h Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{Logger: testLogger(t), Versions: func(k int16) (int16, int16, bool) {
		v, ok := reviewVersions[k]
		return v[0], v[1], ok
	}}, h)
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ln, lis) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	return ln.Addr().String()
}

func reviewListener() Listener {
	return Listener{Name: "SASL", SASL: reviewSASL{}, FailedAuthDelay: -1}
}

func handshake(v int16) *kmsg.SASLHandshakeRequest {
	return &kmsg.SASLHandshakeRequest{Version: v, Mechanism: "PLAIN"}
}

func authenticate(user, pw string) *kmsg.SASLAuthenticateRequest {
	return &kmsg.SASLAuthenticateRequest{Version: 1, SASLAuthBytes: []byte("\x00" + user + "\x00" + pw)}
}

func TestReview1ProbeSASLGate(t *testing.T) {
	t.Run("metadata pipelined behind handshake v1", func(t *testing.T) {
		h := &reviewHandler{}
		addr := startSASLServer(t, reviewListener(), h)
		c := dialRaw(t, addr)
		var b []byte
		b = AppendRequest(b, handshake(1), 1, nil)
		b = AppendRequest(b, kmsg.NewPtrMetadataRequest(), 2, nil)
		b = AppendRequest(b, authenticate("alice", "ok"), 3, nil)
		c.write(b)
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		c.recv(resp)
		c.expectClosed()
		if h.saw(3) {
			t.Fatal("Metadata was handled before authentication")
		}
	})
	t.Run("metadata pipelined behind a bad v0 token", func(t *testing.T) {
		h := &reviewHandler{}
		addr := startSASLServer(t, reviewListener(), h)
		c := dialRaw(t, addr)
		var b []byte
		b = AppendRequest(b, handshake(0), 1, nil)
		tok := []byte("\x00alice\x00bad")
		b = binary.BigEndian.AppendUint32(b, uint32(len(tok)))
		b = append(b, tok...)
		b = AppendRequest(b, kmsg.NewPtrMetadataRequest(), 2, nil)
		c.write(b)
		resp := kmsg.NewPtrSASLHandshakeResponse()
		c.recv(resp)
		c.expectClosed()
		if h.saw(3) {
			t.Fatal("Metadata was handled after a failed v0 exchange")
		}
	})
	t.Run("frame above max receive", func(t *testing.T) {
		h := &reviewHandler{}
		lis := reviewListener()
		lis.MaxSASLReceive = 1024
		addr := startSASLServer(t, lis, h)
		c := dialRaw(t, addr)
		c.write([]byte{0, 0, 4, 1}) // 1025
		c.expectClosed()
	})
	t.Run("reauth as another principal", func(t *testing.T) {
		h := &reviewHandler{}
		lis := reviewListener()
		lis.MaxReauth = time.Hour
		addr := startSASLServer(t, lis, h)
		c := dialRaw(t, addr)
		c.roundTrip(handshake(1), 1)
		c.roundTrip(authenticate("alice", "ok"), 2)
		c.roundTrip(handshake(1), 3)
		c.send(authenticate("mallory", "ok"), 4)
		c.send(kmsg.NewPtrMetadataRequest(), 5)
		r := kmsg.NewPtrSASLAuthenticateResponse()
		r.Version = 1
		c.recv(r)
		if r.ErrorCode == 0 {
			t.Fatal("reauth as another principal accepted")
		}
		c.expectClosed()
		if h.saw(3) {
			t.Fatal("Metadata handled after failed reauth")
		}
	})
}

func startSASLServerS(t *testing.T, lis Listener, h Handler) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{Logger: testLogger(t), QueuedMaxBytes: 1 << 20, Versions: func(k int16) (int16, int16, bool) {
		v, ok := reviewVersions[k]
		return v[0], v[1], ok
	}}, h)
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ln, lis) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	return s, ln.Addr().String()
}

func TestReview1ProbeSASLBudget(t *testing.T) {
	h := &reviewHandler{}
	lis := reviewListener()
	lis.FailedAuthDelay = 50 * time.Millisecond
	s, addr := startSASLServerS(t, lis, h)
	rawTok := func(tok []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
		return append(b, tok...)
	}
	// 1: a big failing v0 token.
	c := dialRaw(t, addr)
	c.roundTrip(handshake(0), 1)
	c.write(rawTok(bytes.Repeat([]byte("x"), 300<<10)))
	c.expectClosed()
	// 2: a big succeeding v0 token, then Metadata.
	c = dialRaw(t, addr)
	c.roundTrip(handshake(0), 1)
	c.write(rawTok([]byte("\x00" + string(bytes.Repeat([]byte("u"), 300<<10)) + "\x00ok")))
	var sz [4]byte
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	if _, err := c.br.Read(sz[:]); err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	c.roundTrip(md, 2)
	c.nc.Close()
	// 3: a big pre-auth garbage Metadata frame.
	c = dialRaw(t, addr)
	f := AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 1, nil)
	f = append(f, bytes.Repeat([]byte{0xff}, 200<<10)...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	c.write(f)
	c.expectClosed()
	// 4: a partial frame then close.
	c = dialRaw(t, addr)
	c.write(append([]byte{0, 7, 0, 0}, bytes.Repeat([]byte{0}, 100<<10)...))
	c.nc.Close()
	waitFor(t, 5*time.Second, func() error {
		if u := s.Budget().Used(); u != 0 {
			return errors.New("budget used " + time.Duration(u).String())
		}
		return nil
	})
}

func TestReview1ProbeTLSStallClose(t *testing.T) {
	ca := testutil.NewCA(t, "ca")
	certPEM, keyPEM := ca.Issue(t, pkix.Name{CommonName: "srv"}, true, "localhost")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Config{Logger: testLogger(t)}, &reviewHandler{})
	served := make(chan error, 1)
	lis := Listener{Name: "SSL", TLS: &tls.Config{Certificates: []tls.Certificate{pair}}}
	go func() { served <- s.ServeListener(ln, lis) }()
	var conns []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}) // a partial ClientHello
		conns = append(conns, c)
	}
	// and one that finished its handshake and never reads
	tc, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	for i := range 200 {
		tc.Write(AppendRequest(nil, kmsg.NewPtrMetadataRequest(), int32(i), nil))
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	s.Close()
	<-served
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	for _, c := range conns {
		c.Close()
	}
}

// Probe (passes): ConnInfo.Principal read by a Later on the writer
// goroutine while the reader re-authenticates: no data race (-race).
func TestReview1ProbePrincipalRace(t *testing.T) {
	got := make(chan string, 1)
	h := HandlerFunc(func(_ context.Context, req *Request) Response {
		switch req.Key {
		case apiVersionsKey:
			return Response{Body: apiVersionsResponse(req)}
		case 3:
			return Response{Later: func() kmsg.Response {
				time.Sleep(50 * time.Millisecond)
				got <- req.Conn.Principal
				return req.Body.ResponseKind()
			}}
		}
		return Response{Body: req.Body.ResponseKind()}
	})
	lis := reviewListener()
	lis.MaxReauth = time.Hour
	addr := startSASLServer(t, lis, h)
	c := dialRaw(t, addr)
	c.roundTrip(handshake(1), 1)
	c.roundTrip(authenticate("alice", "ok"), 2)
	var b []byte
	b = AppendRequest(b, kmsg.NewPtrMetadataRequest(), 3, nil)
	b = AppendRequest(b, handshake(1), 4, nil)
	b = AppendRequest(b, authenticate("alice", "ok"), 5, nil)
	c.write(b)
	if p := <-got; p != "User:alice" {
		t.Fatalf("principal %q", p)
	}
	c.recvFrame()
	c.recvFrame()
	c.recvFrame()
}
