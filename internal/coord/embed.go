package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
)

// EmbeddedConfig configures an etcd member running inside the samsa
// process (`samsa server` without an external etcd).
type EmbeddedConfig struct {
	// Dir is the member's data directory (e.g. <data>/etcd). Required.
	Dir string
	// Name is the member name, e.g. "samsa-1". Default "samsa".
	Name string
	// ClientURL is where clients connect, e.g. http://127.0.0.1:2379 (the
	// default). The scheme may be omitted. Port 0 picks a free port; read
	// the result with Endpoints.
	ClientURL string
	// PeerURL is where other members connect, e.g. http://127.0.0.1:2380
	// (the default). Port 0 picks a free port, for a single member only.
	PeerURL string
	// PeerListenURL, if set, is the address the member binds for its
	// peers while it advertises PeerURL: etcd binds IP addresses only, so
	// a member known by a DNS name (a Kubernetes pod) binds, say,
	// http://0.0.0.0:2380. Empty: it binds PeerURL.
	PeerListenURL string
	// InitialCluster lists every member of a new cluster as
	// "name=peerURL,..."; empty means a cluster of this member alone. It
	// is ignored when Dir already holds a member.
	InitialCluster string
	// Logger receives etcd's own logs, at error level only (etcd is very
	// talkative below that). Default slog.Default().
	Logger *slog.Logger

	// KeystoreFile and TruststoreFile secure the member with mutual TLS;
	// both are required when its URLs (ClientURL, PeerURL, the
	// InitialCluster's) are https://, and refused when they are not. The
	// keystore is one PEM file holding a private key and its certificate
	// chain (in any order, like ssl.keystore.location): the member's
	// certificate on its client and peer URLs, and the client
	// certificate it presents to its peers. It must name the URLs' hosts
	// and allow both server and client authentication (or name no
	// extended key usage). The truststore is a PEM file of CA
	// certificates: clients and peers must present a certificate issued
	// by one of them (client certificate authentication on both URLs),
	// and peers' server certificates are verified against them. Both
	// are read at start: renewed certificates apply at the next start.
	KeystoreFile   string
	TruststoreFile string
}

// Embedded tuning. Limits that bound samsa's own transactions are raised
// over etcd's defaults (128 operations, 1.5 MiB): CreateTopic writes one
// key per partition in a single transaction.
const (
	embeddedMaxTxnOps       = 10240
	embeddedMaxRequestBytes = 8 << 20
	// embeddedCompactionRetention keeps ten minutes of revision history;
	// without compaction etcd's database grows with every ISR change until
	// it hits its quota and refuses writes.
	embeddedCompactionRetention = "10m"
	// embeddedTickMs and embeddedElectionMs are the raft heartbeat
	// interval and election timeout (etcd's defaults: 100 ms, 1000 ms;
	// etcd requires at least five heartbeats per election timeout). When
	// the broker hosting the etcd leader dies, the others elect a new
	// leader one to two election timeouts later, and it extends every
	// lease by one election timeout on promotion: both delay the expiry
	// of the dead broker's session, and until the new leader serves, no
	// other broker can renew its own (docs/replication.md, "Failover
	// timeline"; BenchmarkFailover measured a median of 10.6 s instead of
	// 11.6 s over 21 such failovers with the default session timeout).
	// The cost: a member that hears no heartbeat for 500 ms (a starved
	// process) calls an election; pre-vote keeps it from deposing a
	// leader the others still hear, and check-quorum (always on in etcd)
	// makes a leader that lost its quorum step down.
	embeddedTickMs     = 100
	embeddedElectionMs = 500
	// portAttempts is how often StartEmbedded picks new free ports when a
	// port it picked was taken before etcd could bind it.
	portAttempts = 5
)

// Embedded is a running embedded etcd member.
type Embedded struct {
	etcd      *embed.Etcd
	endpoints []string
	closeOnce sync.Once
	// closing mutes etcd's logs (to debug level) once Close has begun.
	closing atomic.Bool
	// ready is set once the member served clients; only StartEmbedded
	// writes it, before returning.
	ready bool
}

// StartEmbedded starts an etcd member and waits until it serves clients
// (it has joined a cluster with a leader), or until ctx ends.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: embedded etcd needs a data dir", ErrInvalid)
	}
	if cfg.Name == "" {
		cfg.Name = "samsa"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	clientURL, err := parseURL(cfg.ClientURL, "http://127.0.0.1:2379")
	if err != nil {
		return nil, err
	}
	peerURL, err := parseURL(cfg.PeerURL, "http://127.0.0.1:2380")
	if err != nil {
		return nil, err
	}
	if peerURL.Port() == "0" && cfg.InitialCluster != "" {
		return nil, fmt.Errorf("%w: a member of a multi-member cluster needs a fixed peer port", ErrInvalid)
	}
	var peerListen *url.URL
	if cfg.PeerListenURL != "" {
		if peerListen, err = parseURL(cfg.PeerListenURL, ""); err != nil {
			return nil, err
		}
		if peerURL.Port() == "0" || peerListen.Port() == "0" || peerListen.Scheme != peerURL.Scheme {
			return nil, fmt.Errorf("%w: a peer listen URL needs fixed ports and the peer URL's scheme", ErrInvalid)
		}
	}
	secure, err := embeddedTLS(cfg, clientURL, peerURL)
	if err != nil {
		return nil, err
	}
	var tlsInfo transport.TLSInfo
	if secure {
		if tlsInfo, err = memberTLSInfo(cfg); err != nil {
			return nil, err
		}
	}
	var lastErr error
	for range portAttempts {
		e, err := startEmbedded(ctx, cfg, clientURL, peerURL, peerListen, tlsInfo)
		if err == nil {
			return e, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) || (clientURL.Port() != "0" && peerURL.Port() != "0") {
			break
		}
	}
	return nil, lastErr
}

func startEmbedded(ctx context.Context, cfg EmbeddedConfig, clientURL, peerURL, peerListen *url.URL, tlsInfo transport.TLSInfo) (*Embedded, error) {
	curl, err := resolvePort(clientURL)
	if err != nil {
		return nil, err
	}
	purl, err := resolvePort(peerURL)
	if err != nil {
		return nil, err
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.Dir
	ec.ListenClientUrls = []url.URL{*curl}
	ec.AdvertiseClientUrls = []url.URL{*curl}
	ec.ListenPeerUrls = []url.URL{*purl}
	ec.AdvertisePeerUrls = []url.URL{*purl}
	if peerListen != nil {
		ec.ListenPeerUrls = []url.URL{*peerListen}
	}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = cfg.Name + "=" + purl.String()
	}
	ec.InitialClusterToken = "samsa"
	// Empty unless the URLs are https (embeddedTLS): then clients and
	// peers alike must present a certificate of the truststore.
	ec.ClientTLSInfo = tlsInfo
	ec.PeerTLSInfo = tlsInfo
	ec.MaxTxnOps = embeddedMaxTxnOps
	ec.MaxRequestBytes = embeddedMaxRequestBytes
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = embeddedCompactionRetention
	ec.TickMs = embeddedTickMs
	ec.ElectionMs = embeddedElectionMs
	ec.PreVote = true // etcd's default; check-quorum is always on in etcd
	ec.LogLevel = "error"
	em := &Embedded{}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newZapLogger(cfg.Logger.With("component", "etcd", "member", cfg.Name), zapcore.ErrorLevel, &em.closing))

	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("coord: start embedded etcd %s: %w", cfg.Name, err)
	}
	em.etcd = e
	select {
	case <-e.Server.ReadyNotify():
		em.ready = true
	case err := <-e.Err():
		em.Close()
		return nil, fmt.Errorf("coord: start embedded etcd %s: %w", cfg.Name, err)
	case <-e.Server.StopNotify():
		em.Close()
		return nil, fmt.Errorf("coord: start embedded etcd %s: stopped before ready", cfg.Name)
	case <-ctx.Done():
		em.Close()
		return nil, fmt.Errorf("coord: start embedded etcd %s: %w", cfg.Name, ctx.Err())
	}
	for _, l := range e.Clients {
		em.endpoints = append(em.endpoints, curl.Scheme+"://"+l.Addr().String())
	}
	return em, nil
}

// parseURL parses a URL given with or without scheme.
func parseURL(s, def string) (*url.URL, error) {
	if s == "" {
		s = def
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Port() == "" {
		return nil, fmt.Errorf("%w: etcd URL %q (want scheme://host:port)", ErrInvalid, s)
	}
	return u, nil
}

// resolvePort replaces port 0 with a port that is free right now. The port
// is released before etcd binds it, so another process may take it in
// between; StartEmbedded then tries again. Binding port 0 in etcd itself
// would advertise port 0 to the cluster.
func resolvePort(u *url.URL) (*url.URL, error) {
	if u.Port() != "0" {
		return u, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), "0"))
	if err != nil {
		return nil, fmt.Errorf("coord: pick a free port on %s: %w", u.Hostname(), err)
	}
	addr := l.Addr().String()
	l.Close()
	r := *u
	r.Host = addr
	return &r, nil
}

// Endpoints returns the client URLs the member listens on (ports resolved).
func (e *Embedded) Endpoints() []string { return append([]string(nil), e.endpoints...) }

// Done is closed when the member stops (Close, or a fatal error).
func (e *Embedded) Done() <-chan struct{} { return e.etcd.Server.StopNotify() }

// Close stops the member and waits until it has stopped.
func (e *Embedded) Close() error {
	e.closeOnce.Do(func() {
		e.closing.Store(true)
		if !e.ready {
			// embed.Etcd.Close waits for the client servers, which only
			// start once the member is ready: stop the member first.
			e.etcd.Server.HardStop()
		}
		e.etcd.Close()
	})
	return nil
}
