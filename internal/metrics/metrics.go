// Package metrics exports a broker's metrics to Prometheus and serves its
// health endpoints (docs/metrics.md lists every metric).
//
// Metrics implements broker.Observer: the request path tells it of each
// request answered, each batch appended and fetched, each ISR change and
// unclean election, each log flush, and it counts them. The gauges (partition
// counts, under-replicated and under-min-ISR partitions, follower lag, log
// sizes, purgatory sizes, the etcd session) are read at scrape time from
// broker.Status of the serving incarnation (broker.Current), so a scrape
// costs the broker one walk over its replicas and nothing between scrapes.
//
// Names follow Prometheus' conventions (a samsa_ prefix, base units,
// _total for counters) and Kafka's meanings: docs/metrics.md gives the
// Kafka MBean each one stands for. The package imports internal/broker for
// its read-only Status, as the console does; the broker never imports it.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/protocol"
)

const namespace = "samsa"

// Metrics is one broker process's registry: the counters its Observer
// methods feed and the gauges it reads from the current incarnation.
type Metrics struct {
	reg     *prometheus.Registry
	current *broker.Current

	requests      *prometheus.CounterVec
	requestErrors *prometheus.CounterVec
	requestTime   *prometheus.HistogramVec
	bytesIn       *prometheus.CounterVec
	messagesIn    *prometheus.CounterVec
	bytesOut      *prometheus.CounterVec
	replBytesOut  prometheus.Counter
	isrShrinks    prometheus.Counter
	isrExpands    prometheus.Counter
	unclean       prometheus.Counter
	logFlush      prometheus.Histogram
	truncated     prometheus.Counter
	truncatedHW   prometheus.Counter
	renewals      *prometheus.HistogramVec
	etcdRequests  *prometheus.HistogramVec

	// apiNames caches the label of each API key.
	apiNames sync.Map // int16 -> string
	// topics holds each topic's totals for /v1/throughput, beside the
	// labelled counters (which are costly to read back).
	topics sync.Map // string -> *topicCounters
}

// TopicTotals are a topic's counts on this broker since it started: bytes
// and records appended by produce requests (to partitions led here) and
// bytes sent to consumers.
type TopicTotals struct {
	BytesIn    int64 `json:"bytes_in"`
	MessagesIn int64 `json:"messages_in"`
	BytesOut   int64 `json:"bytes_out"`
}

type topicCounters struct{ bytesIn, messagesIn, bytesOut atomic.Int64 }

func (m *Metrics) topic(name string) *topicCounters {
	if c, ok := m.topics.Load(name); ok {
		return c.(*topicCounters)
	}
	c, _ := m.topics.LoadOrStore(name, new(topicCounters))
	return c.(*topicCounters)
}

// TopicTotals returns every topic's totals on this broker.
func (m *Metrics) TopicTotals() map[string]TopicTotals {
	out := map[string]TopicTotals{}
	m.topics.Range(func(k, v any) bool {
		c := v.(*topicCounters)
		out[k.(string)] = TopicTotals{BytesIn: c.bytesIn.Load(), MessagesIn: c.messagesIn.Load(), BytesOut: c.bytesOut.Load()}
		return true
	})
	return out
}

var _ broker.Observer = (*Metrics)(nil)

// New returns the metrics of a broker process whose serving incarnation
// current holds (broker.Config.Current); pass it as broker.Config.Observer.
func New(current *broker.Current) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), current: current}
	latency := prometheus.ExponentialBuckets(0.0001, 2, 16) // 0.1 ms to 3.3 s
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "requests_total",
		Help: "Requests answered, by API and version (Kafka's RequestsPerSec)."}, []string{"api", "version"})
	m.requestErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "request_errors_total",
		Help: "Error codes in responses, by API and error (Kafka's ErrorsPerSec); a response counts each partition's error."}, []string{"api", "error"})
	m.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "request_duration_seconds",
		Help:    "Request time by API, version and phase: local (the handler), remote (waiting for replication, a long poll or a rebalance), total (frame read to response encoded), response_send (response encoded to written to the socket) (Kafka's LocalTimeMs, RemoteTimeMs, TotalTimeMs, ResponseQueueTimeMs+ResponseSendTimeMs).",
		Buckets: latency}, []string{"api", "version", "phase"})
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "topic_bytes_in_total",
		Help: "Bytes of record batches appended by produce requests, by topic (BytesInPerSec)."}, []string{"topic"})
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "topic_messages_in_total",
		Help: "Records appended by produce requests, by topic (MessagesInPerSec)."}, []string{"topic"})
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "topic_bytes_out_total",
		Help: "Bytes of records sent to consumers, by topic (BytesOutPerSec)."}, []string{"topic"})
	m.replBytesOut = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "replication_bytes_out_total",
		Help: "Bytes of records sent to followers (ReplicationBytesOutPerSec)."})
	m.isrShrinks = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "isr_shrinks_total",
		Help: "ISR changes stored by this broker's leaders that removed members (IsrShrinksPerSec)."})
	m.isrExpands = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "isr_expands_total",
		Help: "ISR changes stored by this broker's leaders that added members (IsrExpandsPerSec)."})
	m.unclean = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "unclean_leader_elections_total",
		Help: "Leaders elected from outside the ISR by this broker's controller (UncleanLeaderElectionsPerSec)."})
	m.logFlush = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "log_flush_duration_seconds",
		Help: "Time of partition log flush rounds: fsyncs and checkpoints (LogFlushRateAndTimeMs).", Buckets: latency})
	m.truncated = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "truncated_records_total",
		Help: "Records followers on this broker removed by truncation (a divergence from the leader, or a log emptied to restart at the leader's log start)."})
	m.truncatedHW = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "truncated_committed_records_total",
		Help: "Truncated records that lay below the replica's high watermark, so may have been acknowledged: 0 but after an unclean election."})
	m.renewals = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "etcd_session_renewal_seconds",
		Help:    "Round trips of the etcd session's renewals (a lease keepalive and a heartbeat write, sent together), by outcome: ok, or failed (etcd unreachable, slow or leaderless).",
		Buckets: latency}, []string{"outcome"})
	m.etcdRequests = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "etcd_request_duration_seconds",
		Help:    "Unary etcd requests of the broker's clients (metadata reads, compare-and-swap writes, heartbeats), by method and outcome (ok, failed), retries included.",
		Buckets: latency}, []string{"method", "outcome"})
	m.reg.MustRegister(m.truncated, m.truncatedHW, m.renewals, m.etcdRequests)
	m.reg.MustRegister(m.requests, m.requestErrors, m.requestTime, m.bytesIn, m.messagesIn, m.bytesOut,
		m.replBytesOut, m.isrShrinks, m.isrExpands, m.unclean, m.logFlush, &statusCollector{m: m}, &groupLagCollector{m: m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, for tests and other exporters.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RequestDone implements protocol.Observer.
func (m *Metrics) RequestDone(d protocol.RequestDone) {
	api, version := m.apiName(d.Key), versionLabel(d.Version)
	m.requests.WithLabelValues(api, version).Inc()
	m.requestTime.WithLabelValues(api, version, "local").Observe(d.Local.Seconds())
	if d.Remote > 0 {
		m.requestTime.WithLabelValues(api, version, "remote").Observe(d.Remote.Seconds())
	}
	m.requestTime.WithLabelValues(api, version, "total").Observe(d.Total.Seconds())
	if d.Body != nil {
		countErrors(reflect.ValueOf(d.Body), func(code int16) {
			m.requestErrors.WithLabelValues(api, errorName(code)).Inc()
		})
	}
}

func (m *Metrics) apiName(key int16) string {
	if n, ok := m.apiNames.Load(key); ok {
		return n.(string)
	}
	n := kmsg.NameForKey(key)
	if n == "" {
		n = "Unknown" + strconv.Itoa(int(key))
	}
	m.apiNames.Store(key, n)
	return n
}

// errorName is the label of a Kafka error code: its name, as Kafka's
// ErrorsPerSec tags it.
func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return "UNKNOWN_" + strconv.Itoa(int(code))
}

// errorCodeField is the name of the error code fields of kmsg responses.
const errorCodeField = "ErrorCode"

// countErrors calls fn for every non-zero ErrorCode field of v, a kmsg
// response, and of the structs and slices of structs it holds.
func countErrors(v reflect.Value, fn func(int16)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			countErrors(v.Elem(), fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			switch {
			case f.Name == errorCodeField && f.Type.Kind() == reflect.Int16:
				if c := int16(v.Field(i).Int()); c != 0 {
					fn(c)
				}
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct,
				f.Type.Kind() == reflect.Struct:
				countErrors(v.Field(i), fn)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			countErrors(v.Index(i), fn)
		}
	}
}

// RecordsIn implements broker.Observer.
func (m *Metrics) RecordsIn(topic string, bytes, records int64) {
	m.bytesIn.WithLabelValues(topic).Add(float64(bytes))
	m.messagesIn.WithLabelValues(topic).Add(float64(records))
	c := m.topic(topic)
	c.bytesIn.Add(bytes)
	c.messagesIn.Add(records)
}

// RecordsOut implements broker.Observer.
func (m *Metrics) RecordsOut(topic string, bytes int64, follower bool) {
	if follower {
		m.replBytesOut.Add(float64(bytes))
		return
	}
	m.bytesOut.WithLabelValues(topic).Add(float64(bytes))
	m.topic(topic).bytesOut.Add(bytes)
}

// ISRChanged implements broker.Observer.
func (m *Metrics) ISRChanged(_ string, _ int32, shrink, expand bool) {
	if shrink {
		m.isrShrinks.Inc()
	}
	if expand {
		m.isrExpands.Inc()
	}
}

// UncleanElection implements broker.Observer.
func (m *Metrics) UncleanElection(string, int32) { m.unclean.Inc() }

// Truncated implements broker.Observer.
func (m *Metrics) Truncated(_ string, _ int32, removed, committed int64) {
	m.truncated.Add(float64(removed))
	m.truncatedHW.Add(float64(committed))
}

// SessionRenewal implements broker.Observer.
func (m *Metrics) SessionRenewal(d time.Duration, ok bool) {
	outcome := "ok"
	if !ok {
		outcome = "failed"
	}
	m.renewals.WithLabelValues(outcome).Observe(d.Seconds())
}

// EtcdRequest implements broker.Observer.
func (m *Metrics) EtcdRequest(method string, d time.Duration, ok bool) {
	outcome := "ok"
	if !ok {
		outcome = "failed"
	}
	m.etcdRequests.WithLabelValues(method, outcome).Observe(d.Seconds())
}

// ResponseSent implements protocol.Observer.
func (m *Metrics) ResponseSent(key, version int16, d time.Duration) {
	m.requestTime.WithLabelValues(m.apiName(key), versionLabel(version), "response_send").Observe(d.Seconds())
}

// versionLabels are the labels of the versions a request can have: a
// version is an int16 the server checked against its table, so they are
// few; the table spares an allocation per request.
var versionLabels = func() (l [64]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func versionLabel(v int16) string {
	if v >= 0 && int(v) < len(versionLabels) {
		return versionLabels[v]
	}
	return strconv.Itoa(int(v))
}

// LogFlushed implements broker.Observer.
func (m *Metrics) LogFlushed(d time.Duration) { m.logFlush.Observe(d.Seconds()) }

// NodeIDHeader names the broker that answers a /v1/ request, so that a
// reader can tell a metrics URL that reaches another broker (or itself:
// a loopback metrics.listener advertised to other hosts) from the one it
// meant to ask.
const NodeIDHeader = "Samsa-Node-Id"

// Handler serves /metrics (Prometheus' text format), /healthz (200 while
// the process serves HTTP), /readyz (200 once the broker is ready:
// broker.Broker.Ready; 503 with the reason otherwise), /v1/partitions
// (JSON: broker.Broker.Explain, the partitions led here and their
// replicas, for `samsa topic describe --explain`) and /v1/replicas (JSON:
// broker.Broker.Replicas, every replica hosted here, for the
// unclean-election dry run); /v1/partitions?topic=T shows one topic's
// and history=1 adds the partitions' ISR history (read from etcd);
// /v1/replicas?topic=T likewise.
// /v1/throughput (JSON: TopicTotals by topic) feeds the console's live
// throughput. The console (package web) adds its pages to the mux.
func (m *Metrics) Handler() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	serveJSON := func(view func(b *broker.Broker) any) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			b := m.current.Get()
			if b == nil {
				http.Error(w, "not serving: the broker is starting or registering again", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set(NodeIDHeader, strconv.Itoa(int(b.NodeID())))
			json.NewEncoder(w).Encode(view(b))
		}
	}
	mux.HandleFunc("GET /v1/partitions", func(w http.ResponseWriter, r *http.Request) {
		topics := r.URL.Query()["topic"]
		history := r.URL.Query().Get("history") == "1"
		serveJSON(func(b *broker.Broker) any {
			var parts []broker.PartitionExplain
			if history {
				parts = b.ExplainWithHistory(r.Context(), topics...)
			} else {
				parts = b.Explain(topics...)
			}
			if parts == nil {
				return []broker.PartitionExplain{}
			}
			return parts
		})(w, r)
	})
	mux.HandleFunc("GET /v1/throughput", serveJSON(func(*broker.Broker) any { return m.TopicTotals() }))
	mux.HandleFunc("GET /v1/replicas", func(w http.ResponseWriter, r *http.Request) {
		topics := r.URL.Query()["topic"]
		serveJSON(func(b *broker.Broker) any { return b.Replicas(topics...) })(w, r)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		b := m.current.Get()
		if b == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not serving: the broker is starting or registering again\n"))
			return
		}
		ready, why := b.Ready()
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		w.Write([]byte(why + "\n"))
	})
	return mux
}

// Serve listens on listener (metrics.listener: http://HOST:PORT) and
// serves h there until stop is called; bound is the listener with the
// port it bound (port 0 picks one). A listener that cannot be bound is
// an error: an operator who set it expects it.
func Serve(listener string, h http.Handler, logger *slog.Logger) (bound string, stop func(), err error) {
	u, err := url.Parse(listener)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", nil, fmt.Errorf("metrics.listener %q: want http://HOST:PORT", listener)
	}
	ln, err := net.Listen("tcp", u.Host)
	if err != nil {
		return "", nil, fmt.Errorf("metrics.listener: %w", err)
	}
	host, _, _ := net.SplitHostPort(u.Host)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	bound = "http://" + net.JoinHostPort(host, port)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener stopped", "err", err)
		}
	}()
	logger.Info("metrics listener started", "url", "http://"+ln.Addr().String())
	return bound, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}
