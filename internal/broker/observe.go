package broker

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

// Observer is told of the broker's events, for metrics: internal/metrics
// implements it (Config.Observer; nil observes nothing). Its methods are
// called on the request path and must be quick and safe for concurrent
// use.
type Observer interface {
	// RequestDone: every request answered (protocol.Observer).
	protocol.Observer
	// RecordsIn: a Produce appended a batch set of bytes holding records
	// records to a partition of topic (Kafka's BytesInPerSec,
	// MessagesInPerSec).
	RecordsIn(topic string, bytes, records int64)
	// RecordsOut: a Fetch response carried bytes of topic's records, to a
	// consumer or to a follower (BytesOutPerSec, ReplicationBytesOutPerSec).
	RecordsOut(topic string, bytes int64, follower bool)
	// ISRChanged: this broker stored a new ISR of a partition it leads;
	// shrink when members left, expand when members joined (both for a
	// change that does both).
	ISRChanged(topic string, partition int32, shrink, expand bool)
	// UncleanElection: this broker's controller elected a leader from
	// outside the ISR.
	UncleanElection(topic string, partition int32)
	// LogFlushed: a partition log's flush round took d (LogFlushRateAndTimeMs).
	LogFlushed(d time.Duration)
	// Truncated: a follower's log of a partition lost removed records to
	// a truncation (a divergence from its leader, or a log emptied to
	// restart at the leader's log start); committed of them lay below its
	// high watermark, so may have been acknowledged to a producer: never
	// but after an unclean election.
	Truncated(topic string, partition int32, removed, committed int64)
	// SessionRenewal: one renewal of the broker's etcd session (a lease
	// keepalive and a heartbeat write, together) took d; ok: it renewed.
	SessionRenewal(d time.Duration, ok bool)
	// EtcdRequest: one unary etcd request (method: "Range", "Txn", ...)
	// took d, retries included; ok: it succeeded (a failed CAS compare is
	// a success of the request).
	EtcdRequest(method string, d time.Duration, ok bool)
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) RequestDone(protocol.RequestDone)         {}
func (nopObserver) RecordsIn(string, int64, int64)           {}
func (nopObserver) RecordsOut(string, int64, bool)           {}
func (nopObserver) ISRChanged(string, int32, bool, bool)     {}
func (nopObserver) UncleanElection(string, int32)            {}
func (nopObserver) LogFlushed(time.Duration)                 {}
func (nopObserver) Truncated(string, int32, int64, int64)    {}
func (nopObserver) SessionRenewal(time.Duration, bool)       {}
func (nopObserver) EtcdRequest(string, time.Duration, bool)  {}
func (nopObserver) ResponseSent(int16, int16, time.Duration) {}

// observer returns the configured Observer, or one that observes nothing.
func (b *Broker) observer() Observer {
	if b.cfg.Observer != nil {
		return b.cfg.Observer
	}
	return nopObserver{}
}

// observeFetched counts the records a Fetch response carries, by topic.
func (b *Broker) observeFetched(r *kmsg.FetchRequest, perTopic []int64) {
	if b.cfg.Observer == nil {
		return
	}
	for i, n := range perTopic {
		if n > 0 {
			b.cfg.Observer.RecordsOut(r.Topics[i].Topic, n, r.ReplicaID >= 0)
		}
	}
}
