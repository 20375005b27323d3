package test

// The replication checker that every cluster scenario ends with
// (INVARIANTS.md 2, 3, 4, 5, 9): once the cluster has settled,
//
//   - below the leader's high watermark, every member of the ISR holds
//     byte-identical batches (read from the data directories, not through
//     the brokers);
//   - on every replica the batches' leader epochs never decrease along the
//     log, and the leader-epoch checkpoint is strictly increasing;
//   - in etcd's history of every partition state (replayed with a watch
//     from the first revision), the leader epoch never decreases, the
//     partition epoch strictly increases, no epoch has two leaders, and a
//     leader is always in its ISR.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// checkSettleTimeout bounds how long CheckReplication waits for every
// running replica to be back in the ISR and the logs to agree.
const checkSettleTimeout = 90 * time.Second

// checkedCluster is what the checker needs of a cluster: the process
// harness (Cluster) and the in-process one (inProcessCluster) both are.
type checkedCluster interface {
	// checkClient is a client of the cluster, closed by the cluster.
	checkClient(t testing.TB) *kgo.Client
	// dataDir is broker id's data directory.
	dataDir(id int32) string
	// serving reports whether broker id runs and is not paused, so its
	// replicas are expected back in the ISR.
	serving(id int32) bool
	// etcdEndpoint is etcd's client host:port.
	etcdEndpoint() string
}

func (c *Cluster) checkClient(testing.TB) *kgo.Client { return c.client }
func (c *Cluster) dataDir(id int32) string            { return c.Broker(id).Proc.DataDir }
func (c *Cluster) serving(id int32) bool              { return c.Running(id) && !c.Broker(id).paused }
func (c *Cluster) etcdEndpoint() string               { return c.EtcdAddr }

// replicaDir is the log directory of topic-partition on broker id.
func replicaDir(c checkedCluster, id int32, topic string, partition int32) string {
	return filepath.Join(c.dataDir(id), "logs", fmt.Sprintf("%s-%d", topic, partition))
}

// CheckReplication runs the checker on the given topics. It waits (up to
// checkSettleTimeout) until every partition has a leader and every replica
// on a serving broker is in the ISR, then compares. It must run after the
// scenario's producers have stopped.
func CheckReplication(t testing.TB, c checkedCluster, topics ...string) {
	t.Helper()
	cl := c.checkClient(t)
	WaitFor(t, checkSettleTimeout, func() error { return checkLogs(c, cl, topics) })
	if err := checkPartitionHistory(c.etcdEndpoint(), topics); err != nil {
		t.Fatalf("partition state history: %v", err)
	}
}

// checkLogs is one attempt at the log comparison.
func checkLogs(c checkedCluster, cl *kgo.Client, topics []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterRequestTimeout)
	defer cancel()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return err
	}
	for _, topic := range topics {
		tp, ok := metadataTopic(md, topic)
		if !ok || tp.ErrorCode != 0 {
			return fmt.Errorf("topic %s not in metadata (error %d)", topic, tp.ErrorCode)
		}
		for _, p := range tp.Partitions {
			if p.Leader < 0 {
				return fmt.Errorf("%s-%d has no leader", topic, p.Partition)
			}
			for _, r := range p.Replicas {
				if c.serving(r) && !slices.Contains(p.ISR, r) {
					return fmt.Errorf("%s-%d: running replica %d not in ISR %v", topic, p.Partition, r, p.ISR)
				}
			}
			end, ok := ends.Lookup(topic, p.Partition)
			if !ok || end.Err != nil {
				return fmt.Errorf("%s-%d: end offset: %v", topic, p.Partition, end.Err)
			}
			if err := compareReplicas(c, topic, p.Partition, p.ISR, p.Replicas, end.Offset); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareReplicas checks one partition of a checked cluster (see
// CompareReplicas).
func compareReplicas(c checkedCluster, topic string, partition int32, isr, replicas []int32, hw int64) error {
	dirs := map[int32]string{}
	for _, r := range replicas {
		dirs[r] = replicaDir(c, r, topic, partition)
	}
	if err := CompareReplicas(dirs, isr, hw); err != nil {
		return fmt.Errorf("%s-%d: %w", topic, partition, err)
	}
	return nil
}

// checkPartitionHistory replays every version of the topics' partition
// states from etcd and checks how they may change.
func checkPartitionHistory(etcdAddr string, topics []string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdAddr}, DialTimeout: clusterRequestTimeout})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now, err := cli.Get(ctx, "/samsa/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return err
	}
	history := map[string][]meta.PartitionState{}
	// The replay ends at the revision read above: when an event reaches it,
	// or when etcd reports (on request) that the watch has caught up.
	wch := cli.Watch(ctx, "/samsa/", clientv3.WithPrefix(), clientv3.WithRev(1))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		var resp clientv3.WatchResponse
		select {
		case <-tick.C:
			if err := cli.RequestProgress(ctx); err != nil {
				return err
			}
			continue
		case r, ok := <-wch:
			if !ok {
				return fmt.Errorf("watch ended: %v", ctx.Err())
			}
			resp = r
		}
		if err := resp.Err(); err != nil {
			return fmt.Errorf("replay etcd history: %w", err)
		}
		for _, ev := range resp.Events {
			key := string(ev.Kv.Key)
			if ev.Type != clientv3.EventTypePut || !strings.Contains(key, "/partitions/") {
				continue
			}
			var s meta.PartitionState
			if err := json.Unmarshal(ev.Kv.Value, &s); err != nil {
				return fmt.Errorf("%s at revision %d: %v", key, ev.Kv.ModRevision, err)
			}
			if slices.Contains(topics, s.Topic) {
				history[key] = append(history[key], s)
			}
		}
		done = resp.IsProgressNotify() && resp.Header.Revision >= now.Header.Revision ||
			len(resp.Events) > 0 && resp.Events[len(resp.Events)-1].Kv.ModRevision >= now.Header.Revision
	}
	if len(history) == 0 {
		return fmt.Errorf("no partition states of %v in etcd", topics)
	}
	for key, states := range history {
		leaderOf := map[int32]int32{}
		for i, s := range states {
			if s.Leader >= 0 && !slices.Contains(s.ISR, s.Leader) {
				return fmt.Errorf("%s version %d: leader %d not in ISR %v", key, i, s.Leader, s.ISR)
			}
			if s.Leader >= 0 {
				if l, ok := leaderOf[s.LeaderEpoch]; ok && l != s.Leader {
					return fmt.Errorf("%s: leader epoch %d had leaders %d and %d", key, s.LeaderEpoch, l, s.Leader)
				}
				leaderOf[s.LeaderEpoch] = s.Leader
			}
			if i == 0 {
				continue
			}
			prev := states[i-1]
			if s.LeaderEpoch < prev.LeaderEpoch {
				return fmt.Errorf("%s version %d: leader epoch %d after %d", key, i, s.LeaderEpoch, prev.LeaderEpoch)
			}
			if s.PartitionEpoch <= prev.PartitionEpoch {
				return fmt.Errorf("%s version %d: partition epoch %d after %d", key, i, s.PartitionEpoch, prev.PartitionEpoch)
			}
		}
	}
	return nil
}

// fakeChecked is a checkedCluster of bare data directories, to show the
// checker's log comparison failing on the anomalies it exists for.
type fakeChecked map[int32]string

func (f fakeChecked) checkClient(testing.TB) *kgo.Client { return nil }
func (f fakeChecked) dataDir(id int32) string            { return f[id] }
func (f fakeChecked) serving(int32) bool                 { return true }
func (f fakeChecked) etcdEndpoint() string               { return "" }

// TestCheckerDetects writes replica logs and partition-state histories
// with known anomalies and checks the checker reports each one, and
// passes the sound ones.
func TestCheckerDetects(t *testing.T) {
	batch := func(base int64, epoch int32, value string) []byte {
		b := buildRecordBatch(-1, -1, -1, 1, []rawRecord{{Value: []byte(value)}})
		binary.BigEndian.PutUint64(b, uint64(base))
		binary.BigEndian.PutUint32(b[12:], uint32(epoch))
		return b
	}
	writeLog := func(dir string, batches ...[]byte) {
		p := filepath.Join(dir, "logs", "t-0")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		// A preallocated tail of zeros, as a live segment has.
		data := append(bytes.Join(batches, nil), make([]byte, 128)...)
		if err := os.WriteFile(filepath.Join(p, "00000000000000000000.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logCases := []struct {
		name    string
		a, b    [][]byte
		hw      int64
		wantErr string
	}{
		{"identical", [][]byte{batch(0, 0, "x"), batch(1, 1, "y")}, [][]byte{batch(0, 0, "x"), batch(1, 1, "y")}, 2, ""},
		{"differ above the high watermark only", [][]byte{batch(0, 0, "x"), batch(1, 0, "y")}, [][]byte{batch(0, 0, "x"), batch(1, 1, "z")}, 1, ""},
		{"differ below the high watermark", [][]byte{batch(0, 0, "x"), batch(1, 0, "y")}, [][]byte{batch(0, 0, "x"), batch(1, 1, "z")}, 2, "differ below the high watermark"},
		{"ISR member short of the high watermark", [][]byte{batch(0, 0, "x"), batch(1, 0, "y")}, [][]byte{batch(0, 0, "x")}, 2, "below the high watermark"},
		{"leader epoch going back", [][]byte{batch(0, 2, "x"), batch(1, 1, "y")}, [][]byte{batch(0, 2, "x"), batch(1, 1, "y")}, 2, "leader epoch 1 after epoch 2"},
		{"offset gap", [][]byte{batch(0, 0, "x"), batch(5, 0, "y")}, [][]byte{batch(0, 0, "x"), batch(5, 0, "y")}, 1, "follows one ending at 0"},
	}
	for _, tc := range logCases {
		f := fakeChecked{1: t.TempDir(), 2: t.TempDir()}
		writeLog(f[1], tc.a...)
		writeLog(f[2], tc.b...)
		err := compareReplicas(f, "t", 0, []int32{1, 2}, []int32{1, 2}, tc.hw)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.wantErr)
		}
	}

	e, err := coord.StartEmbedded(context.Background(), coord.EmbeddedConfig{
		Dir: t.TempDir(), Name: "checker", ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	st := func(leader, epoch, pepoch int32, isr ...int32) meta.PartitionState {
		return meta.PartitionState{Leader: leader, LeaderEpoch: epoch, PartitionEpoch: pepoch, ISR: isr}
	}
	histCases := []struct {
		name    string
		states  []meta.PartitionState
		wantErr string
	}{
		{"sound", []meta.PartitionState{st(1, 0, 0, 1, 2), st(1, 0, 1, 1), st(2, 1, 2, 2), st(-1, 2, 3, 2)}, ""},
		{"epoch back", []meta.PartitionState{st(1, 3, 0, 1), st(2, 2, 1, 2)}, "leader epoch 2 after 3"},
		{"two leaders in one epoch", []meta.PartitionState{st(1, 3, 0, 1, 2), st(2, 3, 1, 1, 2)}, "had leaders"},
		{"leader outside the ISR", []meta.PartitionState{st(1, 0, 0, 2)}, "not in ISR"},
		{"partition epoch stuck", []meta.PartitionState{st(1, 0, 4, 1, 2), st(1, 0, 4, 1)}, "partition epoch 4 after 4"},
	}
	for _, tc := range histCases {
		topic := strings.ReplaceAll(tc.name, " ", "-")
		for _, s := range tc.states {
			s.Topic = topic
			v, _ := json.Marshal(s)
			if _, err := cli.Put(context.Background(), "/samsa/checker/partitions/"+topic+"/0", string(v)); err != nil {
				t.Fatal(err)
			}
		}
		err := checkPartitionHistory(strings.TrimPrefix(e.Endpoints()[0], "http://"), []string{topic})
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
