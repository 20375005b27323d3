package broker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/records"
	"github.com/samsa-io/samsa/internal/replica"
)

// The high watermarks of all replicas go to one checkpoint file, rewritten
// only when one moved, and a replica opened at the next start begins from
// its own line, never from another incarnation's.
func TestHighWatermarkCheckpoint(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	newManager := func() *partitionManager { return testPartitionManager(cfg) }
	m := newManager()
	m.loadHighWatermarks() // as openExisting does
	id := meta.NewTopicID()
	self := []int32{cfg.NodeID}
	settings := resolveTopicSettings(nil, nil)
	var lps []*localPartition
	for i := range int32(2) {
		lp, err := m.open(topicPartition{"t", i}, id, settings)
		if err != nil {
			t.Fatal(err)
		}
		lps = append(lps, lp)
		if err := lp.BecomeLeader(0, 0, self, replica.LeaderConfig{Replicas: self, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	produce := func(lp *localPartition, n int) {
		t.Helper()
		for range n {
			if _, err := lp.AppendAsLeader(records.Build([]records.KV{{Value: []byte("v")}}, time.Now().UnixMilli())); err != nil {
				t.Fatal(err)
			}
		}
		if err := lp.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	produce(lps[0], 3)
	produce(lps[1], 1)
	file := filepath.Join(cfg.logDir(), hwCheckpointFile)
	stat := func() os.FileInfo {
		t.Helper()
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}

	m.housekeepRound(time.Now(), true, false)
	first := stat()
	m.housekeepRound(time.Now(), true, false)
	if !os.SameFile(first, stat()) {
		t.Fatal("the checkpoint was rewritten though no high watermark moved")
	}
	produce(lps[0], 1)
	m.housekeepRound(time.Now(), true, false)
	if os.SameFile(first, stat()) {
		t.Fatal("the checkpoint was not rewritten after a high watermark moved")
	}
	got := readHighWatermarks(klog.OSFS{}, cfg.logDir())
	want := map[topicPartition]hwEntry{{"t", 0}: {id, 4}, {"t", 1}: {id, 1}}
	if len(got) != len(want) || got[topicPartition{"t", 0}] != want[topicPartition{"t", 0}] || got[topicPartition{"t", 1}] != want[topicPartition{"t", 1}] {
		t.Fatalf("checkpoint read back as %v, want %v", got, want)
	}
	for _, lp := range lps {
		if err := lp.Close(false); err != nil {
			t.Fatal(err)
		}
	}

	// The next start.
	m2 := newManager()
	m2.loadHighWatermarks()
	lp, err := m2.open(topicPartition{"t", 0}, id, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close(false)
	if hw := lp.HighWatermark(); hw != 4 {
		t.Fatalf("reopened replica's high watermark %d, want the checkpointed 4", hw)
	}
	if hw := m2.takeCheckpointed(topicPartition{"t", 0}, id); hw != 0 {
		t.Fatalf("t-0's line, taken by its open, is still there (%d): a later incarnation or a replica moved back would start from it", hw)
	}
	if hw := m2.takeCheckpointed(topicPartition{"t", 1}, id); hw != 1 {
		t.Fatalf("t-1 would start from %d, want 1", hw)
	}
	m3 := newManager()
	m3.loadHighWatermarks()
	if hw := m3.takeCheckpointed(topicPartition{"t", 1}, meta.NewTopicID()); hw != 0 {
		t.Fatalf("another incarnation of t-1 would start from %d, want 0", hw)
	}
}

// A checkpoint that is cut short or not in the format vouches for nothing.
func TestHighWatermarkCheckpointDamaged(t *testing.T) {
	id := meta.NewTopicID().String()
	good := "0\n2\na 0 " + id + " 5\nb 3 " + id + " 7\n"
	dir := t.TempDir()
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, hwCheckpointFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(good)
	if got := readHighWatermarks(klog.OSFS{}, dir); len(got) != 2 || got[topicPartition{"b", 3}].hw != 7 {
		t.Fatalf("good checkpoint read as %v", got)
	}
	for _, bad := range []string{
		good[:len(good)-1],  // last line cut
		good[:len(good)/2],  // half
		"0\n3\n" + good[4:], // count too high
		"1\n" + good[2:],    // another version
		"0\n1\na 0 " + id + " -1\n",
		"0\n1\na x " + id + " 5\n",
		"0\n1\na 0 notanid 5\n",
		"",
	} {
		write(bad)
		if got := readHighWatermarks(klog.OSFS{}, dir); got != nil {
			t.Errorf("damaged checkpoint %q read as %v, want nothing", bad, got)
		}
	}
}

// failOpenFS fails every OpenFile under one directory (a transient
// EMFILE/EIO while opening one partition's log at start).
type failOpenFS struct {
	klog.OSFS
	under string
}

func (f failOpenFS) OpenFile(name string, flag int, perm fs.FileMode) (klog.File, error) {
	if strings.HasPrefix(name, f.under+string(filepath.Separator)) {
		return nil, errors.New("injected: too many open files")
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

// followerSnapshot: topic "t" (id) with n partitions on self, followed by
// self from broker 2, which is not registered (so no fetcher starts).
func followerSnapshot(self int32, id meta.TopicID, n int) *coord.Snapshot {
	s := &coord.Snapshot{
		Revision:   5,
		Brokers:    map[int32]coord.VersionedBroker{self: {Broker: meta.Broker{ID: self}}},
		Topics:     map[string]coord.VersionedTopic{},
		Partitions: map[string][]coord.VersionedPartition{},
	}
	t := meta.Topic{Name: "t", ID: id}
	for i := range n {
		t.Partitions = append(t.Partitions, []int32{self, 2})
		st := meta.PartitionState{Topic: "t", Partition: int32(i), Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{self, 2}}
		s.Partitions["t"] = append(s.Partitions["t"], coord.VersionedPartition{PartitionState: st, ModRevision: 5})
	}
	s.Topics["t"] = coord.VersionedTopic{Topic: t}
	return s
}

// A start at which a replica's log fails to open (a transient error) keeps
// that replica's line in the checkpoint (review of issue 11: the
// checkpoint then covered only the open replicas, and the next start began
// the replica from high watermark 0 although its log and its checkpointed
// high watermark were intact).
func TestHighWatermarkCheckpointSurvivesAFailedOpen(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	newManager := func(logFS klog.FS) *partitionManager {
		c := cfg
		c.LogFS = logFS
		return testPartitionManager(c)
	}
	self := cfg.NodeID
	id := meta.NewTopicID()
	settings := resolveTopicSettings(nil, nil)

	// First run: two replicas, led here, 3 records each, checkpointed.
	m1 := newManager(nil)
	m1.loadHighWatermarks() // as openExisting does at every start
	for i := range int32(2) {
		lp, err := m1.open(topicPartition{"t", i}, id, settings)
		if err != nil {
			t.Fatal(err)
		}
		if err := lp.BecomeLeader(0, 0, []int32{self}, replica.LeaderConfig{Replicas: []int32{self}, MinInsyncReplicas: 1, ReplicaLagTimeMax: time.Minute}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := lp.AppendAsLeader(records.Build([]records.KV{{Value: []byte("v")}}, time.Now().UnixMilli())); err != nil {
				t.Fatal(err)
			}
		}
		if err := lp.Flush(); err != nil {
			t.Fatal(err)
		}
		if hw := lp.HighWatermark(); hw != 3 {
			t.Fatalf("t-%d HW %d, want 3", i, hw)
		}
	}
	if err := m1.closeAll(); err != nil {
		t.Fatal(err)
	}

	// Second run: t-1's log cannot be opened this time.
	m2 := newManager(failOpenFS{under: m1.dir(topicPartition{"t", 1})})
	if err := m2.openExisting(followerSnapshot(self, id, 2)); err != nil {
		t.Fatal(err)
	}
	if m2.get("t", 1) != nil {
		t.Fatal("t-1 opened despite the injected failure")
	}
	if err := m2.closeAll(); err != nil {
		t.Fatal(err)
	}

	// Third run: everything opens; t-1 follows (its leader unreachable),
	// so its high watermark is what it started from.
	m3 := newManager(nil)
	if err := m3.openExisting(followerSnapshot(self, id, 2)); err != nil {
		t.Fatal(err)
	}
	defer m3.closeAll()
	lp := m3.get("t", 1)
	if lp == nil {
		t.Fatal("t-1 not open")
	}
	if leo := lp.Log().EndOffset(); leo != 3 {
		t.Fatalf("t-1 LEO %d, want 3 (its log is intact)", leo)
	}
	if hw := lp.HighWatermark(); hw != 3 {
		t.Fatalf("t-1 restarted with high watermark %d, want its checkpointed 3: a start at which it failed to open dropped its checkpoint line", hw)
	}
}
