package protocol

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults for zero Config fields, Kafka's where Kafka has one.
const (
	DefaultMaxRequestBytes = 104857600 // socket.request.max.bytes
	// DefaultMaxNonProduceRequestBytes is the default frame cap of requests
	// other than Produce: far above what any of them needs (a SyncGroup
	// carrying the assignments of a very large group, an OffsetCommit of
	// thousands of partitions with metadata), far below what decoding a
	// 100 MiB frame of tiny array elements would cost.
	DefaultMaxNonProduceRequestBytes = 16 << 20

	// produceKey is Produce's API key, the one request exempt from
	// MaxNonProduceRequestBytes.
	produceKey         = 0
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultStallTimeout is the default of Config.StallTimeout.
	DefaultStallTimeout = 10 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultMaxInFlight  = 100
	// DefaultQueuedMaxBytes is the default server-wide memory budget of the
	// request path (queued.max.request.bytes; Kafka: unlimited). See the
	// package documentation.
	DefaultQueuedMaxBytes = 128 << 20
	// DefaultMaxQueuedBytesPerConnection is the default of
	// MaxQueuedBytesPerConnection.
	DefaultMaxQueuedBytesPerConnection = 16 << 20
)

// Config configures a Server. The zero value of every field selects its
// default.
type Config struct {
	// MaxRequestBytes is socket.request.max.bytes (default 104857600): a
	// frame longer than this, or negative, closes the connection before
	// anything is allocated.
	MaxRequestBytes int32
	// MaxNonProduceRequestBytes caps the frames of every request but
	// Produce (default DefaultMaxNonProduceRequestBytes, never above
	// MaxRequestBytes): only Produce carries bulk data, and the others
	// decode into Go structures up to tens of times their wire size (see
	// the package documentation). A larger frame closes the connection
	// once its API key is read, before the body is.
	MaxNonProduceRequestBytes int32
	// Versions reports the implemented version range of an API key;
	// requests for other keys or versions are not passed to the handler
	// (see the package documentation for ApiVersions). The range is further
	// capped at what kmsg can decode. Nil accepts every key and version
	// kmsg knows, which is meant for tests.
	Versions VersionsFunc
	// IdleTimeout is connections.max.idle.ms (default 10 minutes): a
	// connection that starts no request for this long is closed, and so is
	// one that takes longer than this to send a frame once its size prefix
	// has arrived (a client stalled mid-request). Negative disables it.
	IdleTimeout time.Duration
	// StallTimeout (default DefaultStallTimeout; negative disables it):
	// while other connections wait for the memory budget, a connection
	// whose frame over 64 KiB does not fill the step of its buffer it was
	// granted within this long, or that holds the overdraft and does not
	// send the rest of its frame at a pace that finishes it within this
	// long, is closed, giving back what its partial frame holds, so that a
	// client that sends a large frame slowly cannot keep others' requests
	// waiting (see the package documentation). Samsa's own: Kafka has no
	// memory pool by default.
	StallTimeout time.Duration
	// WriteTimeout bounds each write of responses (default 30 seconds), so
	// that a client that stops reading cannot pin the connection's
	// goroutines and buffers. Negative disables it.
	WriteTimeout time.Duration
	// MaxConnections is max.connections, 0 = unlimited: beyond it, new
	// connections are closed at once.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip, 0 = unlimited,
	// negative = none: a new connection from an address that already has
	// this many is closed at once. MaxConnectionsPerIPOverrides
	// (max.connections.per.ip.overrides) sets other limits for some
	// addresses (0 or negative = none), keyed by IP address as net.IP's
	// String writes it.
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides map[string]int
	// QueuedMaxBytes is the server-wide memory budget of the request path
	// (queued.max.request.bytes; default DefaultQueuedMaxBytes, negative =
	// unlimited): request frames being read or awaiting their response,
	// encoded responses waiting to be written, and what handlers take from
	// Server.Budget. See the package documentation.
	QueuedMaxBytes int64
	// MaxQueuedBytesPerConnection pauses the reading of a connection's
	// requests while its unanswered requests and their responses hold this
	// many bytes of the budget or more (default
	// DefaultMaxQueuedBytesPerConnection, negative = no limit): a client
	// that does not read its responses stops being read from, as Kafka
	// mutes a connection until its response is sent.
	MaxQueuedBytesPerConnection int64
	// MaxInFlight bounds the queue, between a connection's reader and
	// writer, of requests handled but not yet answered (default 100; with
	// the one being written and the one just handled, at most
	// MaxInFlight+2 are pending). When it is full the reader stops
	// reading, so TCP flow control pushes back on the client.
	MaxInFlight int
	// Logger receives connection errors (debug for client misbehaviour,
	// error for handler panics and bugs). Nil discards.
	Logger *slog.Logger
	// Observer, if set, is told of every request answered (metrics).
	Observer Observer
}

// Observer is told of every request the server answers, on the
// connection's goroutines: it must be quick and safe for concurrent use.
type Observer interface {
	RequestDone(d RequestDone)
	// ResponseSent: a response of API key and version was written to the socket d
	// after it was encoded (Kafka's ResponseQueueTimeMs and
	// ResponseSendTimeMs together: the wait behind the connection's
	// earlier responses and the write, a sendfile'd Fetch's records
	// included). Responses to acks=0 produces are never sent.
	ResponseSent(key, version int16, d time.Duration)
}

// RequestDone describes one answered request. Its times run from the
// moment its frame was read: Local until the handler returned, Remote
// from then until a waiting response (Response.Later: acks=all, a long
// poll, a rebalance) was ready, zero for the others, and Total until the
// response was encoded for writing (the socket write is not counted).
type RequestDone struct {
	Key, Version         int16
	Listener             string
	Local, Remote, Total time.Duration
	// Body is the response, nil when none is sent (acks=0) or it is a
	// RawResponse (a Fetch served from the log files). The observer must
	// not keep or modify it.
	Body kmsg.Response
}

func (c Config) withDefaults() Config {
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxNonProduceRequestBytes <= 0 {
		c.MaxNonProduceRequestBytes = DefaultMaxNonProduceRequestBytes
	}
	c.MaxNonProduceRequestBytes = min(c.MaxNonProduceRequestBytes, c.MaxRequestBytes)
	if c.Versions == nil {
		c.Versions = kmsgVersions
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.QueuedMaxBytes == 0 {
		c.QueuedMaxBytes = DefaultQueuedMaxBytes
	}
	if c.MaxQueuedBytesPerConnection == 0 {
		c.MaxQueuedBytesPerConnection = DefaultMaxQueuedBytesPerConnection
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server serves the Kafka protocol on any number of listeners, passing
// decoded requests to one Handler.
//
// Goroutines: Serve runs on its caller's goroutine. Every connection has a
// read goroutine, which owns the connection and waits for the connection's
// write goroutine before it ends. Close waits for all of them.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger
	// budget is the memory budget of the request path (QueuedMaxBytes).
	budget *Budget

	// ctx is the parent of every connection's context; cancel is called by
	// Close.
	ctx    context.Context
	cancel context.CancelFunc

	// nextID numbers connections.
	nextID atomic.Uint64
	// wg counts connection goroutines (two per connection). Add is called
	// only with mu held and closed false, so it never races with Wait.
	wg sync.WaitGroup

	mu sync.Mutex
	// closed is set by Close; no listener or connection is added after.
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	// perIP counts the open connections of each remote IP address.
	perIP map[string]int
}

// NewServer returns a server that passes requests to h.
func NewServer(cfg Config, h Handler) *Server {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg:       cfg,
		handler:   h,
		log:       cfg.Logger,
		ctx:       ctx,
		cancel:    cancel,
		budget:    NewBudget(cfg.QueuedMaxBytes),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		perIP:     make(map[string]int),
	}
}

// Budget returns the server's memory budget (Config.QueuedMaxBytes), for
// handlers to take their working memory from (decompression buffers).
// A nil *Server has a nil budget, which never refuses.
func (s *Server) Budget() *Budget {
	if s == nil {
		return nil
	}
	return s.budget
}

// Serve accepts connections on ln until ln is closed. It returns nil once
// Close has been called, and otherwise the listener's error. Serve closes ln
// before returning.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, Listener{Name: "PLAINTEXT"})
}

// ServeListener is Serve for a named listener with the security of lis.
func (s *Server) ServeListener(ln net.Listener, lis Listener) error {
	lis = lis.withDefaults()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: wait, as
				// net/http does, rather than spin or give up.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("protocol: accept failed; retrying", "err", err, "backoff", backoff)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-s.ctx.Done():
					t.Stop()
					return nil
				}
				continue
			}
			return err
		}
		backoff = 0
		s.startConn(nc, lis)
	}
}

// isTemporary reports errors that Accept may return while the listener
// stays usable (the old net.Error Temporary method, which EMFILE sets).
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// startConn registers nc and starts its goroutines, or closes it when the
// server is closed or full.
func (s *Server) startConn(nc net.Conn, lis Listener) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if s.cfg.MaxConnections > 0 && len(s.conns) >= s.cfg.MaxConnections {
		n := len(s.conns)
		s.mu.Unlock()
		s.log.Debug("protocol: too many connections; closing new one", "remote", nc.RemoteAddr(), "connections", n)
		nc.Close()
		return
	}
	ip := remoteIP(nc)
	if limit, ok := s.ipLimit(ip); ok && s.perIP[ip] >= limit {
		s.mu.Unlock()
		s.log.Debug("protocol: too many connections from one address; closing new one", "remote", nc.RemoteAddr(), "limit", limit)
		nc.Close()
		return
	}
	c := newConn(s, nc, lis)
	c.ip = ip
	s.perIP[ip]++
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()

	go c.readLoop()
	go c.writeLoop()
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	s.mu.Unlock()
}

// ipLimit returns the connection limit of an address, and false if it has
// none.
func (s *Server) ipLimit(ip string) (int, bool) {
	if n, ok := s.cfg.MaxConnectionsPerIPOverrides[ip]; ok {
		return max(n, 0), true
	}
	n := s.cfg.MaxConnectionsPerIP
	return max(n, 0), n != 0
}

// remoteIP returns the IP address of nc's peer in net.IP.String form, or
// the whole address for a peer that is not TCP/IP.
func remoteIP(nc net.Conn) string {
	addr := nc.RemoteAddr()
	if ta, ok := addr.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if addr == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// NumConnections returns the number of open connections.
func (s *Server) NumConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close closes every listener and connection and cancels every request
// context, then waits for all connection goroutines, including running
// Later funcs, to end. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	var errs []error
	for ln := range s.listeners {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.cancel()
	for _, c := range conns {
		c.shutdown()
	}
	s.wg.Wait()
	return errors.Join(errs...)
}
