package metrics

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
)

// The gauges read from broker.Status at each scrape.
var (
	descRegistered = prometheus.NewDesc("samsa_broker_registered",
		"1 while the broker's etcd session is live (its registration holds), else 0.", nil, nil)
	descReady = prometheus.NewDesc("samsa_broker_ready",
		"1 while the broker is ready (the /readyz condition), else 0.", nil, nil)
	descRecovering = prometheus.NewDesc("samsa_broker_recovering",
		"1 while the broker recovers from an unclean shutdown (it may not join ISRs or lead), else 0.", nil, nil)
	descActiveController = prometheus.NewDesc("samsa_active_controller",
		"1 on the active controller, else 0; the sum over the cluster should be 1 (ActiveControllerCount).", nil, nil)
	descOffline = prometheus.NewDesc("samsa_offline_partitions",
		"Partitions of the cluster without a live leader, reported by the active controller only, 0 elsewhere (OfflinePartitionsCount).", nil, nil)
	descPartitions = prometheus.NewDesc("samsa_partitions",
		"Replicas hosted on this broker (PartitionCount).", nil, nil)
	descLeaders = prometheus.NewDesc("samsa_leader_partitions",
		"Partitions this broker leads (LeaderCount).", nil, nil)
	descUnderReplicated = prometheus.NewDesc("samsa_under_replicated_partitions",
		"Partitions led here whose ISR is smaller than their replica set (UnderReplicatedPartitions).", nil, nil)
	descUnderMinISR = prometheus.NewDesc("samsa_under_min_isr_partitions",
		"Partitions led here whose ISR is smaller than min.insync.replicas: acks=all produce fails (UnderMinIsrPartitionCount).", nil, nil)
	descAtMinISR = prometheus.NewDesc("samsa_at_min_isr_partitions",
		"Partitions led here whose ISR is exactly min.insync.replicas: one more loss stops acks=all produce (AtMinIsrPartitionCount).", nil, nil)
	descFollowerLag = prometheus.NewDesc("samsa_follower_lag_records",
		"Records a follower lacks, by the leader's account (its log end minus the follower's last fetch offset), for partitions led here.",
		[]string{"topic", "partition", "replica"}, nil)
	descFollowerLagSeconds = prometheus.NewDesc("samsa_follower_lag_seconds",
		"Time since a follower last had everything the leader had; replica.lag.time.max.ms past it, it leaves the ISR.",
		[]string{"topic", "partition", "replica"}, nil)
	descLogSize = prometheus.NewDesc("samsa_log_size_bytes",
		"Size of a partition's log on this broker (Log Size).", []string{"topic", "partition"}, nil)
	descLogEnd = prometheus.NewDesc("samsa_log_end_offset",
		"Log end offset of a partition's replica on this broker (LogEndOffset).", []string{"topic", "partition"}, nil)
	descLogStart = prometheus.NewDesc("samsa_log_start_offset",
		"Log start offset of a partition's replica on this broker (LogStartOffset).", []string{"topic", "partition"}, nil)
	descHighWatermark = prometheus.NewDesc("samsa_high_watermark",
		"High watermark of a partition's replica on this broker.", []string{"topic", "partition"}, nil)
	descProducePurgatory = prometheus.NewDesc("samsa_produce_purgatory_size",
		"Produce requests waiting for their records to be replicated or synced (PurgatorySize, delayedOperation=Produce).", nil, nil)
	descFetchPurgatory = prometheus.NewDesc("samsa_fetch_purgatory_size",
		"Fetch requests waiting for data (PurgatorySize, delayedOperation=Fetch).", nil, nil)
	descConnections = prometheus.NewDesc("samsa_connections",
		"Open client connections (connection-count).", nil, nil)
)

// statusCollector reads the gauges from the serving incarnation.
type statusCollector struct{ m *Metrics }

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRegistered, descReady, descRecovering, descActiveController, descOffline,
		descPartitions, descLeaders, descUnderReplicated, descUnderMinISR, descAtMinISR, descFollowerLag,
		descFollowerLagSeconds, descLogSize, descLogEnd, descLogStart, descHighWatermark, descProducePurgatory,
		descFetchPurgatory, descConnections} {
		ch <- d
	}
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	b := c.m.current.Get()
	if b == nil {
		// Between incarnations: not registered, not ready.
		gauge(descRegistered, 0)
		gauge(descReady, 0)
		return
	}
	st := b.Status()
	ready, _ := b.Ready()
	gauge(descRegistered, flag(st.Registered))
	gauge(descReady, flag(ready))
	gauge(descRecovering, flag(st.Recovering))
	gauge(descActiveController, flag(st.ActiveController))
	offline := 0
	if st.ActiveController {
		offline = st.OfflinePartitions
	}
	gauge(descOffline, float64(offline))
	gauge(descProducePurgatory, float64(st.WaitingProduces))
	gauge(descFetchPurgatory, float64(st.ParkedFetches))
	gauge(descConnections, float64(st.Connections))
	now := time.Now()
	var leaders, under, underMin, atMin int
	for i := range st.Partitions {
		p := &st.Partitions[i]
		part := strconv.Itoa(int(p.Partition))
		gauge(descLogSize, float64(p.SizeBytes), p.Topic, part)
		gauge(descLogEnd, float64(p.LogEnd), p.Topic, part)
		gauge(descLogStart, float64(p.LogStart), p.Topic, part)
		gauge(descHighWatermark, float64(p.HighWatermark), p.Topic, part)
		if !p.Leading() {
			continue
		}
		leaders++
		isr := int32(len(p.ISR))
		if int(isr) < len(p.Replicas) {
			under++
		}
		switch {
		case isr < p.MinInsyncReplicas:
			underMin++
		case isr == p.MinInsyncReplicas:
			atMin++
		}
		for _, f := range p.Followers {
			replica := strconv.Itoa(int(f.ID))
			lag := p.LogEnd - max(f.LogEnd, 0)
			gauge(descFollowerLag, float64(max(lag, 0)), p.Topic, part, replica)
			gauge(descFollowerLagSeconds, max(now.Sub(f.LastCaughtUp).Seconds(), 0), p.Topic, part, replica)
		}
	}
	gauge(descPartitions, float64(len(st.Partitions)))
	gauge(descLeaders, float64(leaders))
	gauge(descUnderReplicated, float64(under))
	gauge(descUnderMinISR, float64(underMin))
	gauge(descAtMinISR, float64(atMin))
}

// descGroupLag is exported by a group's coordinator only, so a sum over
// the cluster counts each group once.
var descGroupLag = prometheus.NewDesc("samsa_consumer_group_lag_records",
	"Records a consumer group has yet to consume in a partition: the partition's high watermark minus the group's committed offset (from its start when it has none), for the groups this broker coordinates.",
	[]string{"group", "topic", "partition"}, nil)

// groupLagTimeout bounds the requests of one scrape's lag: a slow cluster
// costs the scrape the lag, not the scrape.
const groupLagTimeout = 3 * time.Second

// groupLagCollector reads the lag of the groups coordinated here at each
// scrape, through the broker's admin client (kadm's Lag: their committed
// offsets and the partitions' end offsets, from whichever brokers lead
// them). mu keeps concurrent scrapes from stacking requests: a scrape
// while another reads the lag goes without it.
type groupLagCollector struct {
	m  *Metrics
	mu sync.Mutex
}

func (c *groupLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descGroupLag }

func (c *groupLagCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.m.current.Get()
	if b == nil {
		return
	}
	groups := b.CoordinatedGroups()
	if len(groups) == 0 {
		return
	}
	cl, err := b.AdminClient()
	if err != nil {
		return
	}
	if !c.mu.TryLock() {
		return // another scrape is reading the lag: this one goes without
	}
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), groupLagTimeout)
	defer cancel()
	lags, err := kadm.NewClient(cl).Lag(ctx, groups...)
	if err != nil {
		return
	}
	for _, l := range lags {
		if l.Coordinator.NodeID != b.NodeID() {
			continue // moved since CoordinatedGroups: its new coordinator exports it
		}
		for topic, ps := range l.Lag {
			for p, ml := range ps {
				if ml.Err != nil || ml.Lag < 0 {
					continue
				}
				ch <- prometheus.MustNewConstMetric(descGroupLag, prometheus.GaugeValue, float64(ml.Lag),
					l.Group, topic, strconv.Itoa(int(p)))
			}
		}
	}
}
