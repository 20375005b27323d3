package coord

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultCluster is the cluster name used when Connect is given "".
const DefaultCluster = "default"

// Defaults of the Connect options.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 10 * time.Second
)

// Option configures Connect.
type Option func(*options)

type options struct {
	logger         *slog.Logger
	dialTimeout    time.Duration
	requestTimeout time.Duration
	tls            *tls.Config
	onRequest      func(method string, d time.Duration, err error)
}

// WithRequestObserver calls fn after every unary etcd request of the
// client (reads, transactions, lease grants; not the watch and keepalive
// streams) with its method ("Range", "Txn", "Put", "LeaseGrant", ...),
// how long it took (retries included) and its error, for metrics. fn must
// be quick and safe for concurrent use.
func WithRequestObserver(fn func(method string, d time.Duration, err error)) Option {
	return func(o *options) { o.onRequest = fn }
}

// observeRequests is the gRPC interceptor of WithRequestObserver.
func observeRequests(fn func(string, time.Duration, error)) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		fn(method[strings.LastIndexByte(method, '/')+1:], time.Since(start), err)
		return err
	}
}

// WithLogger sets the logger of the client (and of the etcd client
// library, which only reports errors).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDialTimeout bounds how long Connect waits for etcd to answer, and
// the first keepalive of a lease. Default DefaultDialTimeout.
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithRequestTimeout bounds each etcd request made with a context that
// has no deadline of its own, so nothing waits forever on an unreachable
// etcd. Zero or negative disables it. Default DefaultRequestTimeout.
func WithRequestTimeout(d time.Duration) Option { return func(o *options) { o.requestTimeout = d } }

// WithTLS connects to etcd over TLS with cfg (nil: plaintext, the
// default): RootCAs verify etcd's certificate, Certificates hold the
// client certificate an etcd with client certificate authentication
// requires. Leave ServerName empty to check each endpoint's own host name.
// With TLS every endpoint must be https:// (or without scheme); without,
// https:// endpoints are refused (ErrInvalid).
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) {
		o.tls = nil
		if cfg != nil {
			o.tls = cfg.Clone()
		}
	}
}

// Client is a connection to the etcd cluster holding one samsa cluster's
// metadata. It is safe for concurrent use. Sessions and caches created from
// it stop when it is closed.
type Client struct {
	etcd           *clientv3.Client
	keys           keyspace
	cluster        string
	log            *slog.Logger
	dialTimeout    time.Duration
	requestTimeout time.Duration

	// lastRevision is the highest etcd revision committed by a write made
	// through this client (monotonic max; updated by every write method).
	lastRevision atomic.Int64
	// clusterID caches the cluster id once read or created; it never changes.
	clusterID atomic.Pointer[string]

	// ctx is cancelled by Close; sessions and caches derive from it.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards closed and the Add side of wg, so that no goroutine starts
	// after Close began waiting.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // session keepalive and cache goroutines
}

// Connect connects to etcd and checks that it answers within the dial
// timeout (or ctx, whichever ends first). cluster names the samsa cluster
// (the key prefix /samsa/<cluster>/); "" means DefaultCluster.
func Connect(ctx context.Context, endpoints []string, cluster string, opts ...Option) (*Client, error) {
	o := options{dialTimeout: DefaultDialTimeout, requestTimeout: DefaultRequestTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.dialTimeout <= 0 {
		o.dialTimeout = DefaultDialTimeout
	}
	if cluster == "" {
		cluster = DefaultCluster
	}
	if err := validCluster(cluster); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: no etcd endpoints", ErrInvalid)
	}
	if err := checkEndpointsTLS(endpoints, o.tls); err != nil {
		return nil, err
	}
	dialOpts := []grpc.DialOption{
		// gRPC's default reconnect backoff grows to 120 s, far beyond
		// any session timeout; reconnect within a second or two.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   2 * time.Second,
			},
			MinConnectTimeout: o.dialTimeout,
		}),
	}
	if o.onRequest != nil {
		dialOpts = append(dialOpts, grpc.WithChainUnaryInterceptor(observeRequests(o.onRequest)))
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         o.tls,
		DialTimeout: o.dialTimeout,
		// Detect a dead connection (half-open TCP, blackholed peer) even
		// when the lease keepalive stream is the only traffic.
		// Up to what the embedded member takes (etcd's client sends at
		// most 2 MiB by default): large transactions (many partitions,
		// many ACLs) then fail at the server, as ErrTxnTooLarge.
		MaxCallSendMsgSize:   embeddedMaxRequestBytes + 1<<20,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Logger:               newZapLogger(o.logger.With("component", "etcd-client"), zapcore.ErrorLevel, nil),
		DialOptions:          dialOpts,
	})
	if err != nil {
		return nil, fmt.Errorf("coord: connect to %v: %w", endpoints, err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		etcd:           cli,
		keys:           newKeyspace(cluster),
		cluster:        cluster,
		log:            o.logger,
		dialTimeout:    o.dialTimeout,
		requestTimeout: o.requestTimeout,
		ctx:            cctx,
		cancel:         cancel,
	}
	// clientv3.New does not wait for a connection; a linearizable read
	// proves that etcd is reachable and has a leader.
	pctx, pcancel := context.WithTimeout(ctx, o.dialTimeout)
	defer pcancel()
	if _, err := cli.Get(pctx, c.keys.clusterID()); err != nil {
		cancel()
		cli.Close()
		return nil, fmt.Errorf("coord: connect to %v: %w: %w", endpoints, ErrUnavailable, err)
	}
	return c, nil
}

// Cluster returns the samsa cluster name (the key prefix component).
func (c *Client) Cluster() string { return c.cluster }

// LastRevision returns the highest etcd revision committed by any write
// made through this client so far. After a write returns, waiting for
// Cache.WaitRevision(ctx, c.LastRevision()) gives read-your-writes.
func (c *Client) LastRevision() int64 { return c.lastRevision.Load() }

// Close stops every session keepalive and cache of this client, waits for
// their goroutines and closes the etcd connection. It does not revoke
// leases: registrations of sessions not closed first expire after their
// TTL, as after a crash.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if err := c.etcd.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("coord: close: %w", err)
	}
	return nil
}

// goStart runs f on a new goroutine owned by the client (Close waits for
// it). It fails with ErrClosed once Close has begun.
func (c *Client) goStart(f func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// opCtx derives the context of one operation: it applies the request
// timeout to contexts without a deadline, and ends when the client closes
// (the etcd client would otherwise retry a closed connection for seconds).
func (c *Client) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if _, ok := ctx.Deadline(); !ok && c.requestTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.requestTimeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// noteRevision records a committed write revision.
func (c *Client) noteRevision(rev int64) {
	for {
		cur := c.lastRevision.Load()
		if rev <= cur || c.lastRevision.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// wrapErr turns an etcd client error into this package's vocabulary,
// keeping the cause (context errors stay matchable with errors.Is).
func (c *Client) wrapErr(op string, err error) error {
	switch {
	case c.isClosed():
		return fmt.Errorf("coord: %s: %w", op, ErrClosed)
	case errors.Is(err, rpctypes.ErrTooManyOps), errors.Is(err, rpctypes.ErrRequestTooLarge),
		status.Code(err) == codes.ResourceExhausted: // the client's own send limit
		return fmt.Errorf("coord: %s: %w: %w", op, ErrTxnTooLarge, err)
	case isUnavailable(err):
		return fmt.Errorf("coord: %s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("coord: %s: %w", op, err)
}

// isUnavailable reports a gRPC Unavailable status, plain or as an etcd
// server error (no leader, leader changed...).
func isUnavailable(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	return status.Code(err) == codes.Unavailable
}

// ClusterID returns the cluster id: a random 16-byte UUID in Kafka's
// rendering (22 characters of URL-safe base64). The first call anywhere in
// the cluster creates it with a create-if-absent transaction; every later
// call, from any client, returns the same id.
func (c *Client) ClusterID(ctx context.Context) (string, error) {
	if id := c.clusterID.Load(); id != nil {
		return *id, nil
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.clusterID()
	// Read first: a write is refused while etcd is out of space, and the
	// id exists but for the very first call.
	if got, err := c.etcd.Get(ctx, key); err != nil {
		return "", c.wrapErr("cluster id", err)
	} else if len(got.Kvs) == 1 {
		id := string(got.Kvs[0].Value)
		c.clusterID.Store(&id)
		return id, nil
	}
	fresh := newClusterID()
	resp, err := c.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, fresh)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return "", c.wrapErr("cluster id", err)
	}
	id := fresh
	if resp.Succeeded {
		c.noteRevision(resp.Header.Revision)
	} else {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return "", fmt.Errorf("coord: cluster id: %w: vanished", ErrConflict)
		}
		id = string(kvs[0].Value)
	}
	c.clusterID.Store(&id)
	return id, nil
}

// newClusterID returns a random version-4 UUID rendered like Kafka's
// Uuid.toString. Like Kafka's Uuid.randomUuid, it never starts with '-',
// which command-line tools would take for a flag.
func newClusterID() string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("coord: crypto/rand: %v", err))
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		s := base64.RawURLEncoding.EncodeToString(b[:])
		if s[0] != '-' {
			return s
		}
	}
}
