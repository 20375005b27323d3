package broker

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/meta"
)

// ClusterView is the cluster as this broker's metadata shows it: the
// registered brokers and every topic's partitions with their health, for
// the console. It needs no request to anyone.
type ClusterView struct {
	// Revision is the etcd revision of the metadata shown.
	Revision     int64
	ControllerID int32
	Brokers      []BrokerView
	Topics       []TopicView
}

// BrokerView is one registered (live) broker.
type BrokerView struct {
	ID           int32
	Address      string // the inter-broker listener's advertised address
	Rack         string
	Controller   bool
	ShuttingDown bool
	Recovering   bool
	Started      time.Time
	// MetricsURL is its advertised metrics listener ("" if none).
	MetricsURL string
}

// Health is a partition's state in the seeds' three: healthy (ISR equal
// to the replicas), under-replicated (ISR shorter), offline (no live
// leader).
type Health string

// The three health states.
const (
	Healthy         Health = "healthy"
	UnderReplicated Health = "under-replicated"
	Offline         Health = "offline"
)

// TopicView is one topic and its partitions.
type TopicView struct {
	Name       string
	ID         meta.TopicID
	Internal   bool
	Partitions []PartitionView
}

// Health is the worst health of the topic's partitions.
func (t TopicView) Health() Health {
	h := Healthy
	for _, p := range t.Partitions {
		switch p.Health {
		case Offline:
			return Offline
		case UnderReplicated:
			h = UnderReplicated
		}
	}
	return h
}

// PartitionView is one partition's stored state.
type PartitionView struct {
	Partition   int32
	Leader      int32 // meta.NoLeader if none
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	// Dead lists the replicas whose broker is not registered.
	Dead   []int32
	Health Health
	// LeaderMoved: the leader is not the first (preferred) replica.
	LeaderMoved bool
}

// Cluster returns the cluster as this broker's metadata shows it.
func (b *Broker) Cluster() ClusterView {
	s := b.view()
	cv := ClusterView{Revision: s.Revision, ControllerID: s.ControllerID}
	for _, id := range slices.Sorted(maps.Keys(s.Brokers)) {
		vb := s.Brokers[id]
		cv.Brokers = append(cv.Brokers, BrokerView{ID: id, Address: net.JoinHostPort(vb.Host, strconv.Itoa(int(vb.Port))),
			Rack: vb.Rack, Controller: id == s.ControllerID, ShuttingDown: vb.ShuttingDown, Recovering: vb.Recovering,
			Started: time.UnixMilli(vb.StartedUnixMs), MetricsURL: vb.MetricsURL})
	}
	for _, name := range slices.Sorted(maps.Keys(s.Topics)) {
		vt := s.Topics[name]
		tv := TopicView{Name: name, ID: vt.Topic.ID, Internal: isInternalTopic(name)}
		for i, replicas := range vt.Topic.Partitions {
			pv := PartitionView{Partition: int32(i), Leader: meta.NoLeader, Replicas: slices.Clone(replicas)}
			if vp, ok := s.Partition(name, int32(i)); ok {
				pv.Leader, pv.LeaderEpoch, pv.ISR = vp.Leader, vp.LeaderEpoch, slices.Clone(vp.ISR)
			}
			for _, r := range replicas {
				if _, alive := s.Brokers[r]; !alive {
					pv.Dead = append(pv.Dead, r)
				}
			}
			_, leaderAlive := s.Brokers[pv.Leader]
			switch {
			case pv.Leader == meta.NoLeader || !leaderAlive:
				pv.Health = Offline
			case len(pv.ISR) < len(replicas):
				pv.Health = UnderReplicated
			default:
				pv.Health = Healthy
			}
			pv.LeaderMoved = pv.Leader != meta.NoLeader && len(replicas) > 0 && pv.Leader != replicas[0]
			tv.Partitions = append(tv.Partitions, pv)
		}
		cv.Topics = append(cv.Topics, tv)
	}
	return cv
}

// advertisedMetricsURL is the metrics listener as other hosts reach it:
// metrics.listener with a wildcard or empty host replaced by host (the
// inter-broker listener's advertised host); "" if there is none.
func advertisedMetricsURL(listener, host string) string {
	if listener == "" {
		return ""
	}
	u, err := url.Parse(listener)
	if err != nil || u.Host == "" {
		return ""
	}
	h, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return ""
	}
	if h == "" || h == "0.0.0.0" || h == "::" {
		h = host
	}
	return (&url.URL{Scheme: u.Scheme, Host: net.JoinHostPort(h, port)}).String()
}

// isLoopbackHost reports whether host names this machine only.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// AdminClient returns this incarnation's client of the cluster, for views
// that need what only a Kafka request tells (the console's consumer
// groups, the group lag metric): it bootstraps from this broker's own
// inter-broker listener with the inter-broker credentials, so it sees
// what the brokers may see. It lives until Close.
func (b *Broker) AdminClient() (*kgo.Client, error) {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if b.admin != nil {
		return b.admin, nil
	}
	if b.closing.Load() {
		return nil, fmt.Errorf("broker %d is stopping", b.cfg.NodeID)
	}
	addr, ok := brokerAddr(b.view(), b.cfg.NodeID)
	if !ok {
		return nil, fmt.Errorf("broker %d is not registered", b.cfg.NodeID)
	}
	cl, err := kgo.NewClient(b.interBrokerClient(kgo.SeedBrokers(addr),
		kgo.ClientID("samsa-console-"+strconv.Itoa(int(b.cfg.NodeID))), kgo.DialTimeout(5*time.Second))...)
	if err != nil {
		return nil, err
	}
	b.admin = cl
	return cl, nil
}

// closeAdminClient closes the admin client and refuses new ones (Close).
func (b *Broker) closeAdminClient() {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	b.closing.Store(true)
	if b.admin != nil {
		b.admin.Close()
		b.admin = nil
	}
}

// CoordinatedGroups returns the groups this broker coordinates now (of
// the __consumer_offsets partitions it leads and has loaded), sorted.
func (b *Broker) CoordinatedGroups() []string {
	if b.groups == nil {
		return nil
	}
	listed, _ := b.groups.List(nil)
	out := make([]string, 0, len(listed))
	for _, g := range listed {
		out = append(out, g.Group)
	}
	slices.Sort(out)
	return out
}
