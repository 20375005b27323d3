package broker

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/meta"
)

// The high watermarks of every replica of the broker are written down in
// one file, logs/high-watermark-checkpoint, like Kafka's
// replication-offset-checkpoint: every
// replica.high.watermark.checkpoint.interval.ms (5 s) if one has moved,
// and at a clean shutdown. One file costs one fsync a round whatever the
// partition count; a file per partition cost one each, 2,000 every 5 s on
// a broker of 2,000 partitions, idle or not, in the way of the produce
// path's fsyncs. A replica opened at start begins from min(checkpointed,
// LEO) (replica.New); where nothing was checkpointed, from 0 until its
// leader's high watermark (or its own, leading) moves it.
//
// The file is text: a version line "0", a count line, then a line per
// replica: topic, partition, topic id and high watermark, separated by
// spaces (topic names have none). A line whose topic id is not the log's is
// another incarnation's and is ignored; a damaged file reads as empty.
const hwCheckpointFile = "high-watermark-checkpoint"

// hwEntry is one replica's checkpointed high watermark.
type hwEntry struct {
	id meta.TopicID
	hw int64
}

// encodeHighWatermarks renders the checkpoint of parts, ordered by topic
// and partition so that an unchanged set encodes to the same bytes.
func encodeHighWatermarks(parts []*localPartition) []byte {
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b *localPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Index) - int(b.Index)
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(parts))
	for _, lp := range parts {
		fmt.Fprintf(&buf, "%s %d %s %d\n", lp.Topic, lp.Index, lp.topicID, lp.HighWatermark())
	}
	return buf.Bytes()
}

// readHighWatermarks reads the checkpoint in dir: empty if there is none
// or it is damaged (a partial or unknown file vouches for nothing).
func readHighWatermarks(dir string) map[topicPartition]hwEntry {
	b, err := os.ReadFile(filepath.Join(dir, hwCheckpointFile))
	if err != nil {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || len(lines) != n+3 || lines[n+2] != "" {
		return nil
	}
	out := make(map[topicPartition]hwEntry, n)
	for _, line := range lines[2 : n+2] {
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil
		}
		partition, err1 := strconv.ParseInt(f[1], 10, 32)
		id, err2 := meta.ParseTopicID(f[2])
		hw, err3 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || partition < 0 || hw < 0 {
			return nil
		}
		out[topicPartition{f[0], int32(partition)}] = hwEntry{id: id, hw: hw}
	}
	return out
}

// checkpointHighWatermarks writes the checkpoint of the open replicas
// unless it would say what the last one said.
func (m *partitionManager) checkpointHighWatermarks() error {
	m.hwMu.Lock()
	defer m.hwMu.Unlock()
	data := encodeHighWatermarks(m.all())
	if bytes.Equal(data, m.hwWritten) {
		return nil
	}
	if err := klog.WriteFileAtomic(m.fs(), m.b.cfg.logDir(), hwCheckpointFile, data); err != nil {
		return err
	}
	m.hwWritten = data
	return nil
}

// checkpointedHighWatermark returns the high watermark checkpointed for the
// replica of tp in incarnation id, read at start (0 if none).
func (m *partitionManager) checkpointedHighWatermark(tp topicPartition, id meta.TopicID) int64 {
	if e, ok := m.startHW[tp]; ok && e.id == id {
		return e.hw
	}
	return 0
}
