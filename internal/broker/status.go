package broker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/replica"
)

// Status is a read-only snapshot of one broker incarnation, for metrics,
// health checks and the console: what it hosts and how its replicas
// stand, from the metadata it answers clients with and its replicas' own
// state.
type Status struct {
	NodeID int32
	// Registered: the broker's etcd session is live (coord.Session.Live).
	Registered bool
	// Recovering: it started after an unclean shutdown and its
	// registration still says so (recovery.go).
	Recovering bool
	// ActiveController: this broker is the cluster's active controller.
	ActiveController bool
	// MetadataRevision is the etcd revision its replicas match (what it
	// answers clients from) and CacheRevision the latest its metadata
	// cache has seen.
	MetadataRevision, CacheRevision int64
	Connections                     int
	// ParkedFetches and WaitingProduces are the fetches waiting for data
	// and the produces waiting for replication or fsync.
	ParkedFetches, WaitingProduces int64
	// OfflinePartitions counts the partitions of the cluster without a
	// live leader, as the metadata shows them.
	OfflinePartitions int
	// Partitions are the replicas hosted here, by topic and partition.
	Partitions []PartitionStatus
}

// PartitionStatus is one replica hosted here.
type PartitionStatus struct {
	Topic     string
	Partition int32
	// Status is the replica's own view: role, leader, ISR, high
	// watermark and, when leading, its followers.
	replica.Status
	// Replicas is the assignment.
	Replicas []int32
	// MinInsyncReplicas is the topic's min.insync.replicas.
	MinInsyncReplicas int32
	// LogStart and LogEnd are the log's offsets, SizeBytes its size.
	LogStart, LogEnd, SizeBytes int64
	// Truncations audits the log's truncations since it was opened here.
	Truncations Truncations
}

// Leading reports whether this broker leads the partition.
func (p *PartitionStatus) Leading() bool { return p.Role == replica.RoleLeader }

// Status returns a snapshot of the broker.
func (b *Broker) Status() Status {
	s := b.view()
	st := Status{
		NodeID:           b.cfg.NodeID,
		Registered:       b.sessionLive(),
		Recovering:       b.recovering.Load(),
		ActiveController: s.ControllerID == b.cfg.NodeID,
		MetadataRevision: s.Revision,
		CacheRevision:    b.cache.Snapshot().Revision,
		ParkedFetches:    b.parkedFetches.Load(),
		WaitingProduces:  b.waitingProduces.Load(),
	}
	if b.server != nil {
		st.Connections = b.server.NumConnections()
	}
	for _, name := range slices.Sorted(maps.Keys(s.Topics)) {
		for p := range s.Topics[name].Topic.Partitions {
			vp, ok := s.Partition(name, int32(p))
			if !ok {
				continue
			}
			if _, alive := s.Brokers[vp.Leader]; vp.Leader == meta.NoLeader || !alive {
				st.OfflinePartitions++
			}
		}
	}
	b.partitions.mu.RLock()
	parts := slices.Collect(maps.Values(b.partitions.parts))
	b.partitions.mu.RUnlock()
	for _, lp := range parts {
		ps := PartitionStatus{Topic: lp.Topic, Partition: lp.Index, Status: lp.Status(),
			MinInsyncReplicas: lp.settings.Load().minInsyncReplicas, Truncations: lp.truncations.snapshot()}
		if vt, ok := s.Topics[lp.Topic]; ok && vt.Topic.ID == lp.topicID && int(lp.Index) < len(vt.Topic.Partitions) {
			ps.Replicas = slices.Clone(vt.Topic.Partitions[lp.Index])
		}
		l := lp.Log()
		ps.LogStart, ps.LogEnd, ps.SizeBytes = l.StartOffset(), l.EndOffset(), l.Size()
		st.Partitions = append(st.Partitions, ps)
	}
	slices.SortFunc(st.Partitions, func(a, b PartitionStatus) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return st
}

// Ready reports whether the broker is ready for traffic, and why not:
// registered (its session live), not recovering from an unclean
// shutdown, and its replicas caught up with the newest metadata it has:
// every partition assigned to it open here, and every one it leads open
// as leader in the stored leader epoch.
func (b *Broker) Ready() (bool, string) {
	if !b.sessionLive() {
		return false, "not registered: the etcd session is not live"
	}
	if b.recovering.Load() {
		return false, "recovering from an unclean shutdown"
	}
	s := b.cache.Snapshot()
	for _, name := range slices.Sorted(maps.Keys(s.Topics)) {
		vt := s.Topics[name]
		for p, replicas := range vt.Topic.Partitions {
			if !slices.Contains(replicas, b.cfg.NodeID) {
				continue
			}
			lp := b.partitions.get(name, int32(p))
			if lp == nil || lp.topicID != vt.Topic.ID {
				return false, fmt.Sprintf("replica of %s-%d not open yet", name, p)
			}
			if vp, ok := s.Partition(name, int32(p)); ok && vp.Leader == b.cfg.NodeID &&
				(lp.Role() != replica.RoleLeader || lp.LeaderEpoch() != vp.LeaderEpoch) {
				return false, fmt.Sprintf("%s-%d not led here yet (leader epoch %d)", name, p, vp.LeaderEpoch)
			}
		}
	}
	return true, "ready"
}
