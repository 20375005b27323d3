package test

// A TCP fault bridge: a proxy on 127.0.0.1 between a client (a Kafka
// client, a broker, an etcd client) and one target address, which a test
// can cut or blackhole to simulate network faults, like etcd's
// tests/framework/integration/bridge.go.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// bridgeDialTimeout bounds the bridge's connect to its target.
const bridgeDialTimeout = 2 * time.Second

// bridgeState is what the bridge does with traffic.
type bridgeState int

const (
	// bridgeOpen forwards bytes both ways.
	bridgeOpen bridgeState = iota
	// bridgeCut resets every connection, existing and new: the peer sees
	// "connection reset" at once, as when a host is down.
	bridgeCut
	// bridgeBlackholed forwards nothing: bytes in flight and new
	// connections are held, unanswered, so the peer sees a hang (a
	// partition where packets are dropped), until Heal resumes them with
	// nothing lost, as TCP retransmission would after a partition heals.
	bridgeBlackholed
)

func (s bridgeState) String() string {
	switch s {
	case bridgeOpen:
		return "open"
	case bridgeCut:
		return "cut"
	case bridgeBlackholed:
		return "blackholed"
	}
	return fmt.Sprintf("bridgeState(%d)", int(s))
}

// Bridge is a TCP proxy listening on 127.0.0.1:0 and forwarding every
// accepted connection to a target address. Cut, Blackhole and Heal switch
// faults on and off for existing and new connections alike.
//
// Goroutines: one accept loop, and per connection one goroutine per
// direction (the client-to-target one also dials). All are counted in wg
// and stop on Close, which waits for them.
type Bridge struct {
	ln net.Listener

	// mu guards the fields below it.
	mu sync.Mutex
	// target is where new connections are forwarded; SetTarget changes it
	// (a restarted server may have had to move to another port).
	target string
	// state applies to every connection; peers, to those of one Kafka
	// client id, while state is open.
	state bridgeState
	peers map[string]bridgeState
	// changed is closed, and replaced, whenever state or peers change, to
	// wake connections waiting out a blackhole.
	changed chan struct{}
	// classify makes the bridge read the client id from the first Kafka
	// request header of each connection before forwarding it, so that
	// per-peer rules apply.
	classify bool
	// conns are the live connections.
	conns  map[*bridgeConn]struct{}
	closed bool
	// accepted counts connections accepted, for tests.
	accepted int

	wg sync.WaitGroup
}

// bridgeConn is one proxied connection: the accepted client side and the
// dialled target side.
type bridgeConn struct {
	client net.Conn
	// server is set once dialled; guarded by Bridge.mu.
	server net.Conn
	// peer is the client id of the connection's first Kafka request (for a
	// classifying bridge); guarded by Bridge.mu.
	peer string
	// done is closed by close, which closes both sides.
	done      chan struct{}
	closeOnce sync.Once
}

// close closes both sides. reset makes the close send a TCP RST, so the
// peer sees "connection reset by peer" rather than an orderly EOF. Safe to
// call from any goroutine, more than once; it takes no bridge lock.
func (c *bridgeConn) close(server net.Conn, reset bool) {
	c.closeOnce.Do(func() {
		close(c.done)
		for _, nc := range []net.Conn{c.client, server} {
			if nc == nil {
				continue
			}
			if tc, ok := nc.(*net.TCPConn); ok && reset {
				tc.SetLinger(0)
			}
			nc.Close()
		}
	})
}

// NewBridge starts a bridge to target. It is closed when the test ends.
func NewBridge(t testing.TB, target string) *Bridge {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("bridge listen: %v", err)
	}
	b := &Bridge{ln: ln, target: target, conns: map[*bridgeConn]struct{}{},
		peers: map[string]bridgeState{}, changed: make(chan struct{})}
	b.wg.Add(1)
	go b.acceptLoop()
	t.Cleanup(b.Close)
	return b
}

// NewKafkaBridge starts a bridge to a Kafka listener that tells its
// clients apart by the client id of their first request, so CutPeer,
// BlackholePeer and HealPeer can fault one client (a follower's fetcher)
// and leave the others alone.
func NewKafkaBridge(t testing.TB, target string) *Bridge {
	b := NewBridge(t, target)
	b.mu.Lock()
	b.classify = true
	b.mu.Unlock()
	return b
}

// Addr is the bridge's host:port, where clients connect.
func (b *Bridge) Addr() string { return b.ln.Addr().String() }

// SetTarget changes where new connections go; existing ones are kept.
func (b *Bridge) SetTarget(target string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.target = target
}

// State returns the current fault state.
func (b *Bridge) State() bridgeState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Conns returns the number of live proxied connections.
func (b *Bridge) Conns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// Cut resets every existing connection and every new one until Heal.
func (b *Bridge) Cut() {
	b.mu.Lock()
	b.setStateLocked(bridgeCut)
	victims := b.takeConnsLocked("")
	b.mu.Unlock()
	for c, server := range victims {
		c.close(server, true)
	}
}

// CutPeer is Cut for the connections of one client id only, until
// HealPeer. The bridge must classify (NewKafkaBridge).
func (b *Bridge) CutPeer(clientID string) {
	b.mu.Lock()
	b.setPeerLocked(clientID, bridgeCut)
	victims := b.takeConnsLocked(clientID)
	b.mu.Unlock()
	for c, server := range victims {
		c.close(server, true)
	}
}

// BlackholePeer is Blackhole for the connections of one client id only.
func (b *Bridge) BlackholePeer(clientID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setPeerLocked(clientID, bridgeBlackholed)
}

// HealPeer ends CutPeer or BlackholePeer for one client id.
func (b *Bridge) HealPeer(clientID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setPeerLocked(clientID, bridgeOpen)
}

func (b *Bridge) setPeerLocked(clientID string, s bridgeState) {
	if !b.classify {
		panic("bridge: per-peer faults need a classifying bridge (NewKafkaBridge)")
	}
	if s == bridgeOpen {
		delete(b.peers, clientID)
	} else {
		b.peers[clientID] = s
	}
	b.signalLocked()
}

// signalLocked wakes every connection waiting for a state change.
func (b *Bridge) signalLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// stateForLocked is what the bridge does with c's traffic.
func (b *Bridge) stateForLocked(c *bridgeConn) bridgeState {
	if b.state != bridgeOpen {
		return b.state
	}
	return b.peers[c.peer]
}

// Blackhole stops forwarding: existing connections stop moving bytes
// (what was sent is held, not lost) and new connections are accepted but
// not forwarded, until Heal or Cut.
func (b *Bridge) Blackhole() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setStateLocked(bridgeBlackholed)
}

// Heal ends a cut or a blackhole: held bytes and connections move on, new
// connections are forwarded.
func (b *Bridge) Heal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setStateLocked(bridgeOpen)
}

func (b *Bridge) setStateLocked(s bridgeState) {
	if b.state == s {
		return
	}
	b.state = s
	b.signalLocked()
}

// takeConnsLocked removes from the connection set those of client id peer
// (all of them if peer is empty) and returns them with each connection's
// target side.
func (b *Bridge) takeConnsLocked(peer string) map[*bridgeConn]net.Conn {
	out := make(map[*bridgeConn]net.Conn, len(b.conns))
	for c := range b.conns {
		if peer != "" && c.peer != peer {
			continue
		}
		out[c] = c.server
		delete(b.conns, c)
	}
	return out
}

// Close stops the bridge: the listener and every connection are closed and
// all its goroutines have returned when Close returns.
func (b *Bridge) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.wg.Wait()
		return
	}
	b.closed = true
	b.ln.Close()
	b.setStateLocked(bridgeCut)
	victims := b.takeConnsLocked("")
	b.mu.Unlock()
	for c, server := range victims {
		c.close(server, true)
	}
	b.wg.Wait()
}

func (b *Bridge) acceptLoop() {
	defer b.wg.Done()
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			return // closed; Accept has no other permanent errors on loopback
		}
		c := &bridgeConn{client: nc, done: make(chan struct{})}
		b.mu.Lock()
		b.accepted++
		if b.closed || b.state == bridgeCut {
			b.mu.Unlock()
			c.close(nil, true)
			continue
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go b.serve(c)
	}
}

// waitOpen waits until the bridge forwards, and reports false if the
// connection ends (cut, closed) first.
func (b *Bridge) waitOpen(c *bridgeConn) bool {
	for {
		b.mu.Lock()
		state, changed := b.stateForLocked(c), b.changed
		b.mu.Unlock()
		switch state {
		case bridgeOpen:
			select {
			case <-c.done:
				return false
			default:
				return true
			}
		case bridgeCut:
			return false
		}
		select {
		case <-changed:
		case <-c.done:
			return false
		}
	}
}

// end removes c from the set and closes it (orderly, unless reset).
func (b *Bridge) end(c *bridgeConn, reset bool) {
	b.mu.Lock()
	delete(b.conns, c)
	server := c.server
	b.mu.Unlock()
	c.close(server, reset)
}

// serve dials the target once the bridge is open, then copies target to
// client on a second goroutine and client to target on this one.
func (b *Bridge) serve(c *bridgeConn) {
	defer b.wg.Done()
	var prefix []byte
	b.mu.Lock()
	classify := b.classify
	b.mu.Unlock()
	if classify {
		var peer string
		prefix, peer = readKafkaClientID(c.client)
		b.mu.Lock()
		c.peer = peer
		b.mu.Unlock()
	}
	if !b.waitOpen(c) {
		b.end(c, true)
		return
	}
	b.mu.Lock()
	target := b.target
	b.mu.Unlock()
	server, err := net.DialTimeout("tcp", target, bridgeDialTimeout)
	if err != nil {
		b.end(c, true) // as if the target refused the connection
		return
	}
	b.mu.Lock()
	_, live := b.conns[c]
	if live {
		c.server = server
		b.wg.Add(1) // this goroutine holds one, so Close cannot be past Wait
	}
	b.mu.Unlock()
	if !live { // cut or closed while dialling
		server.Close()
		return
	}
	if len(prefix) > 0 {
		if _, err := server.Write(prefix); err != nil {
			b.end(c, false)
			return
		}
	}
	go func() {
		defer b.wg.Done()
		b.pump(c, c.client, server)
		b.end(c, false)
	}()
	b.pump(c, server, c.client)
	b.end(c, false)
}

// readKafkaClientID reads the start of a Kafka connection up to the end
// of the first request header's client id, and returns the bytes read
// (to be forwarded) and the client id ("" if the bytes are not a request
// header with one).
func readKafkaClientID(r io.Reader) ([]byte, string) {
	// size int32, api key int16, version int16, correlation id int32,
	// client id length int16.
	hdr := make([]byte, 14)
	if n, err := io.ReadFull(r, hdr); err != nil {
		return hdr[:n], ""
	}
	size := int32(binary.BigEndian.Uint32(hdr))
	n := int(int16(binary.BigEndian.Uint16(hdr[12:])))
	if n <= 0 || n > 256 || int(size) < 10+n {
		return hdr, ""
	}
	id := make([]byte, n)
	if m, err := io.ReadFull(r, id); err != nil {
		return append(hdr, id[:m]...), ""
	}
	return append(hdr, id...), string(id)
}

// pump copies src to dst while the bridge is open; it holds what it read
// while the bridge is blackholed, and returns when either side fails or
// the connection is closed.
func (b *Bridge) pump(c *bridgeConn, dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		if !b.waitOpen(c) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !b.waitOpen(c) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// bridgeGoroutines returns the stacks of goroutines running bridge code.
func bridgeGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "test.(*Bridge).") {
			out = append(out, g)
		}
	}
	return out
}

// echoServer accepts connections on 127.0.0.1:0 and echoes what it reads,
// until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// echoOnce writes msg and reads it back within timeout.
func echoOnce(c net.Conn, msg string, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte(msg)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if !bytes.Equal(got, []byte(msg)) {
		return fmt.Errorf("echoed %q, want %q", got, msg)
	}
	return nil
}

// dialEcho connects through b and echoes msg once. A bridge that resets
// connections may do so before the dial completes; that is an error too.
func dialEcho(b *Bridge, msg string) error {
	c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer c.Close()
	return echoOnce(c, msg, 2*time.Second)
}

func dialBridge(t *testing.T, b *Bridge) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial bridge: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestBridge drives one bridge through every state with an echo server
// behind it, and checks that Close leaves no bridge goroutine behind.
func TestBridge(t *testing.T) {
	b := NewBridge(t, echoServer(t))

	c1 := dialBridge(t, b)
	if err := echoOnce(c1, "hello", 2*time.Second); err != nil {
		t.Fatalf("open bridge: %v", err)
	}

	// Blackhole: the existing connection and a new one hang, nothing is
	// lost, and both resume on Heal.
	b.Blackhole()
	if err := echoOnce(c1, "held", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("blackholed bridge answered: %v", err)
	}
	c2 := dialBridge(t, b)
	c2.Write([]byte("new"))
	c2.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := c2.Read(make([]byte, 8)); !isTimeout(err) {
		t.Fatalf("new connection through a blackhole read %d bytes, err %v; want a timeout", n, err)
	}
	b.Heal()
	// c1's "held" (written before and during the blackhole) arrives now.
	c1.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := make([]byte, len("held"))
	if _, err := io.ReadFull(c1, got); err != nil || string(got) != "held" {
		t.Fatalf("after Heal: read %q, %v; want the held bytes", got, err)
	}
	c2.SetReadDeadline(time.Now().Add(2 * time.Second))
	got = make([]byte, len("new"))
	if _, err := io.ReadFull(c2, got); err != nil || string(got) != "new" {
		t.Fatalf("after Heal: new connection read %q, %v", got, err)
	}
	if err := echoOnce(c1, "again", 2*time.Second); err != nil {
		t.Fatalf("healed bridge: %v", err)
	}

	// Cut: existing connections are reset, new ones too.
	b.Cut()
	c1.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c1.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read on a cut connection: %v; want reset or EOF", err)
	}
	WaitFor(t, 2*time.Second, func() error {
		if n := b.Conns(); n != 0 {
			return fmt.Errorf("%d connections live after Cut", n)
		}
		return nil
	})
	if err := dialEcho(b, "x"); err == nil || isTimeout(err) {
		t.Fatalf("new connection through a cut bridge: %v; want reset or EOF", err)
	}

	b.Heal()
	c4 := dialBridge(t, b)
	if err := echoOnce(c4, "healed", 2*time.Second); err != nil {
		t.Fatalf("after Heal from Cut: %v", err)
	}

	// Close with a live and a blackholed connection: every goroutine ends.
	b.Blackhole()
	c5 := dialBridge(t, b)
	c5.Write([]byte("stuck"))
	b.Close()
	// Close waits for every goroutine's deferred Done, which runs just
	// before the goroutine exits: a goroutine may still show in a stack
	// dump, runnable at its closing brace, for a moment after.
	WaitFor(t, 2*time.Second, func() error {
		if g := bridgeGoroutines(); len(g) > 0 {
			return fmt.Errorf("%d bridge goroutines left after Close:\n%s", len(g), strings.Join(g, "\n\n"))
		}
		return nil
	})
	if _, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
		t.Errorf("the bridge still accepts after Close")
	}
}

// TestBridgeTargetDown: a target that refuses connections makes the
// bridge reset the client's connection, and SetTarget redirects new ones.
func TestBridgeTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	b := NewBridge(t, dead)
	if err := dialEcho(b, "x"); err == nil || isTimeout(err) {
		t.Fatalf("through a bridge to a dead target: %v; want reset or EOF", err)
	}
	b.SetTarget(echoServer(t))
	if err := echoOnce(dialBridge(t, b), "y", 2*time.Second); err != nil {
		t.Fatalf("after SetTarget: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// kafkaHello is the start of a Kafka request from clientID: a header
// (ApiVersions v0) whose client id a classifying bridge reads. The echo
// server behind the bridge sends it back.
func kafkaHello(clientID string) []byte {
	body := binary.BigEndian.AppendUint16(nil, 18) // api key
	body = binary.BigEndian.AppendUint16(body, 0)  // version
	body = binary.BigEndian.AppendUint32(body, 1)  // correlation id
	body = binary.BigEndian.AppendUint16(body, uint16(len(clientID)))
	body = append(body, clientID...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestBridgePeerFaults checks that a classifying bridge faults only the
// connections of the chosen client id, existing and new, and heals them.
func TestBridgePeerFaults(t *testing.T) {
	b := NewKafkaBridge(t, echoServer(t))
	hello := func(c net.Conn, id string) error { return echoOnce(c, string(kafkaHello(id)), 2*time.Second) }

	victim, bystander := dialBridge(t, b), dialBridge(t, b)
	if err := hello(victim, "samsa-replica-2"); err != nil {
		t.Fatal(err)
	}
	if err := hello(bystander, "samsa-replica-3"); err != nil {
		t.Fatal(err)
	}

	b.CutPeer("samsa-replica-2")
	victim.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := victim.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("read on a cut peer's connection: %v; want reset or EOF", err)
	}
	if err := echoOnce(bystander, "still", 2*time.Second); err != nil {
		t.Fatalf("other peer after CutPeer: %v", err)
	}
	// A new connection of the cut peer is refused once it has said who it is.
	again := dialBridge(t, b)
	again.Write(kafkaHello("samsa-replica-2"))
	again.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := again.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("new connection of a cut peer: %v; want reset or EOF", err)
	}
	if err := hello(dialBridge(t, b), "samsa-cluster-harness"); err != nil {
		t.Fatalf("new connection of another client after CutPeer: %v", err)
	}

	// Blackhole: the peer's new connection hangs, then moves on at heal
	// with nothing lost.
	b.BlackholePeer("samsa-replica-2")
	held := dialBridge(t, b)
	msg := kafkaHello("samsa-replica-2")
	held.Write(msg)
	held.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := held.Read(make([]byte, 8)); !isTimeout(err) {
		t.Fatalf("blackholed peer read %d bytes, err %v; want a timeout", n, err)
	}
	if err := echoOnce(bystander, "unaffected", 2*time.Second); err != nil {
		t.Fatalf("other peer during BlackholePeer: %v", err)
	}
	b.HealPeer("samsa-replica-2")
	held.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(held, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("after HealPeer: read %q, %v; want the held bytes", got, err)
	}
	if err := hello(dialBridge(t, b), "samsa-replica-2"); err != nil {
		t.Fatalf("healed peer: %v", err)
	}
}
