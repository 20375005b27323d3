package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/group"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/txn"
)

// Broker is one samsa broker: the Kafka protocol listeners, the partition
// replicas it hosts, and its registration in the cluster metadata (etcd).
type Broker struct {
	cfg    Config
	logger *slog.Logger

	// host is what the broker process keeps across incarnations: the
	// data directory's lock and the embedded etcd member. ownsHost: Close
	// closes it too (Start); Run keeps it for the next incarnation.
	host     *host
	ownsHost bool
	// client talks to etcd; cache mirrors the cluster metadata.
	client *coord.Client
	cache  *coord.Cache
	// liveness is the etcd client of the registration (session) and the
	// controller alone: a connection of its own, so that nothing the
	// request path sends to etcd (topic creations, ISR changes, producer
	// ids) queues ahead of their keepalives and writes (issue 16;
	// internal/coord, "Liveness").
	liveness *coord.Client
	// session is the broker's registration lease.
	session *coord.Session

	clusterID string
	// advertised is this broker's registration (host/port given to clients).
	advertised meta.Broker

	server *protocol.Server
	// listeners are the bound listeners, in the order of the listeners
	// setting; lc is that setting resolved, and secured each listener's
	// security, by name.
	listeners []net.Listener
	lc        listenerConfig
	secured   map[string]protocol.Listener
	// interBroker is how this broker connects to other brokers (TLS,
	// SASL of the inter-broker listener).
	interBroker interBrokerSecurity
	// scramFakeKey is the cluster's secret for unknown users' fake SCRAM
	// salts (coord.ScramFakeKey).
	scramFakeKey []byte

	partitions  *partitionManager
	producerIDs *producerIDAllocator
	// isr stores the ISR changes this broker's leaders propose.
	isr *isrUpdater
	// controller is this broker's controller candidate.
	controller *controller.Controller
	// groups coordinates the consumer groups of the __consumer_offsets
	// partitions led here.
	groups *group.Coordinator
	// txns coordinates the transactions of the __transaction_state
	// partitions led here; peers are its clients to the other brokers.
	txns  *txn.Coordinator
	peers *peerClients
	// aclIndex is the authorization index of the current ACLs (acl.go).
	aclIndex aclIndex
	// quotas enforces the client quotas (quotas.go); nil in handler
	// tests that build a Broker by hand.
	quotas *quotaManager
	// parkedFetches counts long-poll fetches waiting for data, and
	// waitingProduces the produces waiting for their records to be
	// replicated or synced (Kafka's fetch and produce purgatories).
	parkedFetches   atomic.Int64
	waitingProduces atomic.Int64

	// cancel stops the background goroutines, which wg waits for.
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// markerTaken is set once start consumed the clean-shutdown marker:
	// only then may Close write one.
	markerTaken bool
	// recovering is set from start, when the previous process did not
	// shut down cleanly, until the registration's Recovering flag is
	// cleared (recovery.go). While set, Close writes no clean-shutdown
	// marker: the logs may still lack what the broker had acknowledged,
	// and the next start must know.
	recovering atomic.Bool

	// logFailure is done once a log failed (logFailed), and logFailedErr
	// set then.
	logFailure   sync.Once
	logFailedErr atomic.Pointer[error]

	// admin is the cluster client of AdminClient, made on first use;
	// closing refuses new ones once Close began.
	adminMu sync.Mutex
	admin   *kgo.Client
	closing atomic.Bool

	closeOnce sync.Once
	closeErr  error
	// logsCloseErr is what closing the partitions' logs reported (Close):
	// non-nil if a log failed or did not close cleanly.
	logsCloseErr error
}

// logFailed stops the broker after an I/O error failed one of its logs, as
// Kafka halts a broker whose only log directory failed: the log may lack
// what it reported durable, so its replica must leave every ISR and never
// be elected. The broker revokes its registration, so the controller moves
// its leaderships and drops it from the ISRs at once; Run then shuts it
// down with a non-zero exit. Meanwhile the replica reports no fetch
// position (replica.FetchPosition fails) and, as leader, its high
// watermark stays below its last successful flush.
func (b *Broker) logFailed(lp *localPartition, err error) {
	b.logFailure.Do(func() {
		ferr := fmt.Errorf("broker: log of %s-%d failed: %w", lp.Topic, lp.Index, err)
		b.logFailedErr.Store(&ferr)
		b.logger.Error("a log failed: revoking the registration and stopping the broker", "topic", lp.Topic, "partition", lp.Index, "err", err)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := b.session.Close(ctx); err != nil {
				b.logger.Error("cannot revoke the registration after a log failure", "err", err)
			}
		}()
	})
}

// sessionLive reports whether the broker's session is live now
// (coord.Session.Live): a leader acknowledges no write past its deadline.
func (b *Broker) sessionLive() bool { return b.session != nil && b.session.Live() }

// Start brings a broker up: metadata store, registration, listeners,
// partition replicas. It returns once the broker serves requests; Close
// stops it.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &Broker{cfg: cfg, logger: cfg.Logger.With("node", cfg.NodeID)}
	if err := b.start(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Run starts a broker and serves until ctx is done, then shuts it down.
//
// A broker that loses its registration (its session expired: the process
// was paused or starved, or cut off from the etcd quorum; or another
// broker fenced it, see coord's "Liveness") stops serving at once, closes
// its partitions and registers again in the same process, as a new
// incarnation, keeping its data directory's lock and its embedded etcd
// member: the process does not exit, so a broker that was paused for a
// while, or lost its session to an etcd leader change, takes the etcd
// quorum down with nothing (docs/replication.md, "Failover timeline").
// Starting again is retried every restartBackoff until it succeeds (etcd
// out of reach, or out of space). Run returns with an error, and the
// process exits with a non-zero status for its supervisor to restart it,
// only when a log failed (logFailed, or opening the logs) or the first
// incarnation cannot start.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	logger := cfg.Logger.With("node", cfg.NodeID)
	h, err := openHost(ctx, cfg, logger)
	if err != nil {
		return err
	}
	for incarnation := 1; ; incarnation++ {
		b := &Broker{cfg: cfg, logger: logger, host: h}
		if err := b.start(ctx); err != nil {
			closeErr := b.Close()
			if incarnation == 1 || b.logsCloseErr != nil || errors.Is(err, errOpenLogs) {
				return errors.Join(err, closeErr, h.close())
			}
			if ctx.Err() != nil {
				return h.close() // stopped while registering again
			}
			logger.Warn("cannot register again yet; retrying", "incarnation", incarnation, "err", err, "retry_in", restartBackoff)
			select {
			case <-ctx.Done():
				return h.close()
			case <-time.After(restartBackoff):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return errors.Join(b.Close(), h.close())
		case <-b.session.Done():
		}
		logger.Warn("broker registration lost: stopping this incarnation and registering again", "incarnation", incarnation)
		closeErr := b.Close()
		if ferr := b.logFailedErr.Load(); ferr != nil || b.logsCloseErr != nil {
			// A non-zero exit: a supervisor that restarts on failure
			// (systemd, Docker's on-failure) must restart the broker,
			// which comes back recovering (Close wrote no clean-shutdown
			// marker).
			var failed error
			if ferr != nil {
				failed = *ferr
			}
			logger.Error("broker stopped after a log failure", "err", errors.Join(failed, b.logsCloseErr))
			return errors.Join(failed, fmt.Errorf("broker: %w", coord.ErrSessionLost), closeErr, h.close())
		}
		if closeErr != nil {
			// Revoking a lost session fails while etcd is unreachable;
			// the lease expires or the next registration replaces it.
			logger.Warn("closing the incarnation that lost its registration", "err", closeErr)
		}
	}
}

// restartBackoff is how long Run waits before trying again to start an
// incarnation that failed (etcd out of reach or refusing writes, the
// previous registration not expired yet...).
const restartBackoff = time.Second

// errOpenLogs marks a start that failed opening the partitions' logs: Run
// does not retry it.
var errOpenLogs = errors.New("broker: open logs")

// host is what a broker process keeps across its incarnations (Run): the
// data directory's lock and the embedded etcd member, if any.
type host struct {
	lock *os.File
	etcd *coord.Embedded
	// etcdTLS secures the broker's etcd clients; nil when the etcd URLs
	// are http (Config.metadataTLS).
	etcdTLS *tls.Config
}

// openHost takes the data directory's lock and starts the embedded etcd
// member (unless cfg names external etcd endpoints).
func openHost(ctx context.Context, cfg Config, logger *slog.Logger) (*host, error) {
	// Before anything starts: a TLS setting that does not match the etcd
	// URLs, or key material that does not load, is a config error.
	etcdTLS, err := cfg.metadataTLS()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.logDir(), 0o755); err != nil {
		return nil, fmt.Errorf("broker: data dir: %w", err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	h := &host{lock: lock, etcdTLS: etcdTLS}
	if len(cfg.MetadataEndpoints) == 0 {
		e, err := coord.StartEmbedded(ctx, coord.EmbeddedConfig{
			Dir:            cfg.etcdDir(),
			Name:           "samsa-" + strconv.Itoa(int(cfg.NodeID)),
			ClientURL:      cfg.MetadataClientURL,
			PeerURL:        cfg.MetadataPeerURL,
			PeerListenURL:  cfg.MetadataPeerListenURL,
			InitialCluster: cfg.MetadataInitialCluster,
			Logger:         logger,
			// Set exactly when the URLs are https (metadataTLS).
			KeystoreFile:   cfg.MetadataTLSKeystore,
			TruststoreFile: cfg.MetadataTLSTruststore,
		})
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("broker: embedded etcd: %w", err)
		}
		h.etcd = e
	}
	return h, nil
}

// endpoints returns the etcd endpoints: the embedded member's, or cfg's.
func (h *host) endpoints(cfg Config) []string {
	if h.etcd != nil {
		return h.etcd.Endpoints()
	}
	return cfg.MetadataEndpoints
}

// close stops the embedded etcd member and releases the lock.
func (h *host) close() error {
	var errs []error
	if h.etcd != nil {
		errs = append(errs, h.etcd.Close())
	}
	errs = append(errs, h.lock.Close())
	return errors.Join(errs...)
}

func (b *Broker) start(ctx context.Context) error {
	if b.host == nil {
		h, err := openHost(ctx, b.cfg, b.logger)
		if err != nil {
			return err
		}
		b.host, b.ownsHost = h, true
	}
	clean, err := takeCleanShutdownMarker(b.cfg.DataDir, b.cfg.logDir())
	if err != nil {
		return err
	}
	b.markerTaken = true
	if !clean {
		b.recovering.Store(true)
		b.logger.Warn("the previous broker process on this data directory did not shut down cleanly: registering as recovering, out of ISRs and leadership until caught up")
	}
	endpoints := b.host.endpoints(b.cfg)
	etcdOpts := []coord.Option{coord.WithLogger(b.logger), coord.WithTLS(b.host.etcdTLS)}
	if b.cfg.Observer != nil {
		obs := b.cfg.Observer
		etcdOpts = append(etcdOpts, coord.WithRequestObserver(func(method string, d time.Duration, err error) {
			obs.EtcdRequest(method, d, err == nil)
		}))
	}
	client, err := coord.Connect(ctx, endpoints, b.cfg.ClusterName, etcdOpts...)
	if err != nil {
		return fmt.Errorf("broker: connect to etcd: %w", err)
	}
	b.client = client
	if b.liveness, err = coord.Connect(ctx, endpoints, b.cfg.ClusterName, etcdOpts...); err != nil {
		return fmt.Errorf("broker: connect to etcd: %w", err)
	}
	if b.clusterID, err = client.ClusterID(ctx); err != nil {
		return fmt.Errorf("broker: cluster id: %w", err)
	}

	if b.lc, err = b.cfg.resolveListeners(); err != nil {
		return err
	}
	if err := b.addInitialScram(ctx); err != nil {
		return err
	}
	if b.interBroker, err = b.cfg.interBrokerSecurity(b.lc); err != nil {
		return err
	}
	b.secured = map[string]protocol.Listener{}
	for _, l := range b.lc.listeners {
		if b.secured[l.Name], err = b.protocolListener(b.lc, l.Name); err != nil {
			return err
		}
	}
	for _, l := range b.lc.listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			return fmt.Errorf("broker: listen %s://%s: %w", l.Name, l.Addr, err)
		}
		b.listeners = append(b.listeners, ln)
	}
	if b.advertised, err = b.advertisedBroker(); err != nil {
		return err
	}

	if b.cache, err = client.NewCache(ctx); err != nil {
		return fmt.Errorf("broker: metadata cache: %w", err)
	}
	b.producerIDs = newProducerIDAllocator(client)
	gcfg := b.cfg.Groups
	gcfg.Logger = b.logger
	b.groups = group.New(gcfg)
	tcfg := b.cfg.Txns
	tcfg.Logger = b.logger
	b.peers = &peerClients{b: b}
	b.txns = txn.New(tcfg, b.producerIDs, b)
	b.isr = newISRUpdater(b)
	b.quotas = newQuotaManager()
	b.partitions = newPartitionManager(b)
	if err := b.partitions.openExisting(b.cache.Snapshot()); err != nil {
		return fmt.Errorf("%w: %w", errOpenLogs, err)
	}
	if b.session, err = b.register(ctx); err != nil {
		return fmt.Errorf("broker: register node %d: %w", b.cfg.NodeID, err)
	}

	bg, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.wg.Add(7)
	go func() { defer b.wg.Done(); b.runGroupTicks(bg) }()
	go func() { defer b.wg.Done(); b.runTxnTicks(bg) }()
	if b.recovering.Load() {
		b.wg.Add(1)
		go func() { defer b.wg.Done(); b.runRecovery(bg) }()
	}
	go func() { defer b.wg.Done(); b.isr.run(bg) }()
	go func() { defer b.wg.Done(); b.partitions.run(bg) }()
	go func() { defer b.wg.Done(); b.partitions.runHousekeeping(bg) }()
	go func() { defer b.wg.Done(); b.partitions.runCleaner(bg) }()
	// Fence the brokers whose heartbeats stop (coord's "Liveness"), on
	// the liveness client like the session's own heartbeats.
	b.wg.Add(1)
	go func() { defer b.wg.Done(); b.liveness.WatchPeers(bg, b.session) }()
	b.controller = controller.New(controller.Config{
		Client:  b.liveness,
		Cache:   b.cache,
		Session: b.session,
		Unclean: func(t meta.Topic) bool {
			return resolveTopicSettings(t.Configs, b.cfg.TopicDefaults).uncleanLeaderElection
		},
		AutoRebalance:     b.cfg.AutoLeaderRebalance,
		RebalanceInterval: b.cfg.LeaderImbalanceCheckInterval,
		ImbalancePercent:  b.cfg.LeaderImbalancePercent,
		OnUncleanElection: b.observer().UncleanElection,
		Logger:            b.logger,
	})
	go func() {
		defer b.wg.Done()
		err := b.controller.Run(bg)
		if err != nil {
			b.logger.Error("controller candidate stopped", "err", err)
		}
	}()

	// Serve once the view (what clients are answered from) shows this
	// broker registered, so its first Metadata answers name it. The
	// registration is the liveness client's write.
	if err := b.waitOwnRegistration(ctx); err != nil {
		return fmt.Errorf("broker: apply own registration: %w", err)
	}
	b.server = protocol.NewServer(b.cfg.protocolConfig(b.logger), b)
	for i, ln := range b.listeners {
		lis := b.secured[b.lc.listeners[i].Name]
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if err := b.server.ServeListener(ln, lis); err != nil {
				b.logger.Error("listener stopped", "addr", ln.Addr(), "err", err)
			}
		}()
	}
	b.logger.Info("broker started", "cluster", b.clusterID, "listeners", b.Addrs(),
		"advertised", net.JoinHostPort(b.advertised.Host, strconv.Itoa(int(b.advertised.Port))))
	b.cfg.Current.set(b)
	return nil
}

// startViewTimeout bounds how long Start waits for its view to show its
// own registration.
const startViewTimeout = 30 * time.Second

func (b *Broker) waitOwnRegistration(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startViewTimeout)
	defer cancel()
	rev := max(b.client.LastRevision(), b.liveness.LastRevision())
	if err := b.cache.WaitRevision(ctx, rev); err != nil {
		return err
	}
	return b.partitions.waitReconciled(ctx, rev)
}

// registerRetryWindow is how long past the session timeout register keeps
// retrying: etcd may extend a lease by an election timeout when a leader
// takes over, and checks for expired leases every 500 ms.
const registerRetryWindow = 5 * time.Second

// register registers the broker in etcd. The registration of a previous
// incarnation that did not shut down cleanly (kill -9, a crash) lives on
// until its lease expires. When its lease is the one recorded in this data
// directory (datadir.go) it is replaced at once. Otherwise (the record was
// lost, or another data directory's broker claims the node.id), like a Kafka
// broker whose registration the controller rejects as a duplicate, keep
// retrying until the session timeout has passed; a registration still held
// after that belongs to a live broker with the same node.id.
func (b *Broker) register(ctx context.Context) (*coord.Session, error) {
	deadline := time.Now().Add(b.cfg.SessionTimeout + registerRetryWindow)
	for logged := false; ; logged = true {
		s, err := b.liveness.RegisterBroker(ctx, b.advertised, b.cfg.SessionTimeout,
			coord.ReplacingLease(previousLease(b.cfg.DataDir)), coord.OnRenewal(b.observer().SessionRenewal))
		if err == nil {
			if err := recordLease(b.cfg.DataDir, s.LeaseID()); err != nil {
				s.Close(ctx)
				return nil, fmt.Errorf("broker: record session: %w", err)
			}
			return s, nil
		}
		if !errors.Is(err, coord.ErrBrokerIDInUse) || time.Now().After(deadline) {
			return s, err
		}
		if !logged {
			b.logger.Warn("node id registered by another session, probably this broker's before it stopped uncleanly; retrying until that session expires",
				"session_timeout", b.cfg.SessionTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (while waiting for an older registration to expire: %v)", err, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// advertisedBroker derives the registration from the listeners: an
// endpoint per listener (advertised.listeners, else the bound address,
// a wildcard or empty host advertised as "localhost"), Host and Port
// the inter-broker listener's.
func (b *Broker) advertisedBroker() (meta.Broker, error) {
	reg := meta.Broker{ID: b.cfg.NodeID, Rack: b.cfg.Rack, StartedUnixMs: time.Now().UnixMilli(), Recovering: b.recovering.Load()}
	bound := map[string]net.Addr{}
	for i, ln := range b.listeners {
		bound[b.lc.listeners[i].Name] = ln.Addr()
	}
	eps, err := b.lc.endpoints(bound)
	if err != nil {
		return reg, err
	}
	reg.Endpoints = eps
	ib, _ := reg.Endpoint(b.lc.interBroker)
	reg.Host, reg.Port = ib.Host, ib.Port
	reg.MetricsURL = advertisedMetricsURL(b.cfg.MetricsListener, ib.Host)
	if u, err := url.Parse(reg.MetricsURL); err == nil && isLoopbackHost(u.Hostname()) && !isLoopbackHost(ib.Host) {
		b.logger.Warn("metrics.listener is on loopback while other brokers reach this one at another host: "+
			"the console's and --explain's views of this broker work only from this host (bind it to a routable address or 0.0.0.0)",
			"metrics_url", reg.MetricsURL, "advertised_host", ib.Host)
	}
	return reg, nil
}

// Addrs returns the bound listener addresses.
func (b *Broker) Addrs() []string {
	out := make([]string, len(b.listeners))
	for i, ln := range b.listeners {
		out[i] = ln.Addr().String()
	}
	return out
}

// NodeID returns the broker's node id.
func (b *Broker) NodeID() int32 { return b.cfg.NodeID }

// RequestBudget returns the request path's memory budget
// (queued.max.request.bytes).
func (b *Broker) RequestBudget() *protocol.Budget { return b.server.Budget() }

// Close stops serving, closes every partition (flushing its log), revokes
// the broker's registration, stops the embedded etcd and, if every log
// closed cleanly and the broker is not recovering from an unclean shutdown,
// writes the clean-shutdown marker. It is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.cfg.Current.clear(b)
		b.closeAdminClient()
		var errs []error
		var logsErr error
		if b.partitions != nil {
			// Before waiting for the cleaner below.
			b.partitions.stopCompactions()
		}
		b.controlledShutdown()
		if b.server != nil {
			errs = append(errs, b.server.Close())
		}
		for _, ln := range b.listeners {
			ln.Close()
		}
		if b.cancel != nil {
			b.cancel()
		}
		b.wg.Wait()
		if b.txns != nil {
			b.txns.Close()
		}
		if b.peers != nil {
			b.peers.close()
		}
		if b.groups != nil {
			b.groups.Close()
		}
		if b.partitions != nil {
			logsErr = b.partitions.closeAll()
			errs = append(errs, logsErr)
		}
		if ferr := b.logFailedErr.Load(); ferr != nil && logsErr == nil {
			logsErr = *ferr
		}
		b.logsCloseErr = logsErr
		if b.session != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			errs = append(errs, b.session.Close(ctx))
			cancel()
		}
		if b.cache != nil {
			errs = append(errs, b.cache.Close())
		}
		if b.client != nil {
			errs = append(errs, b.client.Close())
		}
		if b.liveness != nil {
			errs = append(errs, b.liveness.Close())
		}
		if b.host != nil {
			switch {
			case !b.markerTaken:
			case logsErr != nil:
				b.logger.Warn("not every log closed cleanly: no clean-shutdown marker", "err", logsErr)
			case b.recovering.Load():
				b.logger.Warn("stopping before recovery from the unclean shutdown was done: no clean-shutdown marker")
			default:
				if err := writeCleanShutdownMarker(b.cfg.DataDir); err != nil {
					errs = append(errs, fmt.Errorf("broker: write clean-shutdown marker: %w", err))
				}
			}
			if b.ownsHost {
				errs = append(errs, b.host.close())
			}
		}
		b.closeErr = errors.Join(errs...)
		if b.closeErr == nil {
			b.logger.Info("broker stopped")
		}
	})
	return b.closeErr
}

// controlledShutdownTimeout bounds how long Close waits for the controller
// to move leadership away.
const controlledShutdownTimeout = 30 * time.Second

// controlledShutdown marks the registration as shutting down, so the
// controller hands this broker's leaderships to in-sync replicas and drops
// it from the ISRs, and waits until it leads nothing another replica could
// take over. Meanwhile it keeps serving, so clients see only retriable
// NOT_LEADER_OR_FOLLOWER answers and move on: a rolling restart loses no
// write (Kafka's controlled.shutdown).
func (b *Broker) controlledShutdown() {
	if b.session == nil || b.cache == nil || b.cancel == nil {
		return // not started
	}
	select {
	case <-b.session.Done():
		// The session is gone (cut off from etcd, or expired): the
		// controller has moved or is moving leadership already, and this
		// broker must stop serving at once rather than wait on etcd.
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
	defer cancel()
	go func() {
		select {
		case <-b.session.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := b.session.MarkShuttingDown(ctx); err != nil {
		b.logger.Warn("controlled shutdown: cannot mark the registration", "err", err)
		return
	}
	for {
		changed := b.cache.Changed()
		n := movableLeaderships(b.cache.Snapshot(), b.cfg.NodeID)
		if n == 0 {
			b.logger.Info("controlled shutdown: leadership moved away")
			return
		}
		select {
		case <-ctx.Done():
			b.logger.Warn("controlled shutdown: gave up waiting for leadership to move", "partitions", n)
			return
		case <-changed:
		}
	}
}

// movableLeaderships counts the partitions id leads that another live,
// in-sync replica, neither shutting down nor recovering, could lead.
func movableLeaderships(s *coord.Snapshot, id int32) int {
	n := 0
	for _, parts := range s.Partitions {
		for _, vp := range parts {
			if !vp.Exists() || vp.Leader != id {
				continue
			}
			for _, r := range vp.ISR {
				if vb, ok := s.Brokers[r]; ok && r != id && !vb.ShuttingDown && !vb.Recovering {
					n++
					break
				}
			}
		}
	}
	return n
}

// liveBrokers returns the ids of registered brokers, sorted.
func liveBrokers(s *coord.Snapshot) []int32 {
	ids := make([]int32, 0, len(s.Brokers))
	for id := range s.Brokers {
		ids = append(ids, id)
	}
	sortInt32s(ids)
	return ids
}

// placementBrokers is the live brokers in the order replicas are assigned
// over (rack-aware, see placement).
func placementBrokers(s *coord.Snapshot) []int32 {
	return placement(liveBrokers(s), func(id int32) string { return s.Brokers[id].Rack })
}

// controllerID is the controller reported to a client that was told the
// brokers in listed (those with an endpoint for its listener): the elected
// one, or, when there is none (an election under way) or the client has no
// address for it, the lowest listed broker id. Every broker can serve the
// admin requests that clients send to "the controller" (they are etcd
// transactions), so any listed answer works; -1 if none is listed.
func controllerID(s *coord.Snapshot, listed map[int32]bool) int32 {
	if s.ControllerID >= 0 && listed[s.ControllerID] {
		return s.ControllerID
	}
	for _, id := range liveBrokers(s) {
		if listed[id] {
			return id
		}
	}
	return -1
}

// validTopicName applies Kafka's topic name rules.
func validTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > 249:
		return fmt.Errorf("topic name is longer than 249 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q contains %q; legal characters are ASCII letters, digits, '.', '_' and '-'", name, r)
		}
	}
	return nil
}
