package broker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
	newManager := func() *partitionManager {
		b := &Broker{cfg: cfg, logger: quietLogger()}
		b.isr = newISRUpdater(b)
		return newPartitionManager(b)
	}
	m := newManager()
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
	got := readHighWatermarks(cfg.logDir())
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
	m2.startHW = readHighWatermarks(cfg.logDir())
	lp, err := m2.open(topicPartition{"t", 0}, id, settings)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close(false)
	if hw := lp.HighWatermark(); hw != 4 {
		t.Fatalf("reopened replica's high watermark %d, want the checkpointed 4", hw)
	}
	if hw := m2.checkpointedHighWatermark(topicPartition{"t", 1}, meta.NewTopicID()); hw != 0 {
		t.Fatalf("another incarnation of t-1 would start from %d, want 0", hw)
	}
	if hw := m2.checkpointedHighWatermark(topicPartition{"t", 1}, id); hw != 1 {
		t.Fatalf("t-1 would start from %d, want 1", hw)
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
	if got := readHighWatermarks(dir); len(got) != 2 || got[topicPartition{"b", 3}].hw != 7 {
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
		if got := readHighWatermarks(dir); got != nil {
			t.Errorf("damaged checkpoint %q read as %v, want nothing", bad, got)
		}
	}
}
