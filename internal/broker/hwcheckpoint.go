package broker

import (
	"bytes"
	"fmt"
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

// hwLine is one line of the checkpoint.
type hwLine struct {
	tp topicPartition
	hwEntry
}

// encodeHighWatermarks renders a checkpoint of lines, ordered by topic and
// partition so that an unchanged set encodes to the same bytes.
func encodeHighWatermarks(lines []hwLine) []byte {
	slices.SortFunc(lines, func(a, b hwLine) int {
		if c := strings.Compare(a.tp.topic, b.tp.topic); c != 0 {
			return c
		}
		return int(a.tp.partition) - int(b.tp.partition)
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(&buf, "%s %d %s %d\n", l.tp.topic, l.tp.partition, l.id, l.hw)
	}
	return buf.Bytes()
}

// readHighWatermarks reads the checkpoint in dir: empty if there is none
// or it is damaged (a partial or unknown file vouches for nothing).
func readHighWatermarks(fsys klog.FS, dir string) map[topicPartition]hwEntry {
	b, err := klog.ReadFile(fsys, filepath.Join(dir, hwCheckpointFile))
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

// loadHighWatermarks reads the checkpoint at start (openExisting), before
// any replica opens; until then no checkpoint is written, so that a start
// that fails early does not replace the file with an empty one.
func (m *partitionManager) loadHighWatermarks() {
	m.hwMu.Lock()
	defer m.hwMu.Unlock()
	m.hwStart = readHighWatermarks(m.fs(), m.b.cfg.logDir())
	if m.hwStart == nil {
		m.hwStart = map[topicPartition]hwEntry{}
	}
}

// takeCheckpointed returns, and forgets, the high watermark checkpointed
// at start for the replica of tp in incarnation id (0 if none): a replica
// that opens later (moved away and back, or its topic re-created) did not
// leave it.
func (m *partitionManager) takeCheckpointed(tp topicPartition, id meta.TopicID) int64 {
	m.hwMu.Lock()
	defer m.hwMu.Unlock()
	e, ok := m.hwStart[tp]
	delete(m.hwStart, tp)
	if ok && e.id == id {
		return e.hw
	}
	return 0
}

// checkpointHighWatermarks writes the checkpoint of the open replicas
// unless it would say what the last one said. The lines read at start of
// replicas that have not opened since (their log failed to open) are
// carried forward while their directory holds that incarnation, so one
// start at which a log cannot open does not cost it its high watermark at
// the next.
func (m *partitionManager) checkpointHighWatermarks() error {
	m.hwMu.Lock()
	defer m.hwMu.Unlock()
	if m.hwStart == nil {
		return nil // not loaded yet
	}
	parts := m.all()
	lines := make([]hwLine, 0, len(parts)+len(m.hwStart))
	open := make(map[topicPartition]bool, len(parts))
	for _, lp := range parts {
		tp := topicPartition{lp.Topic, lp.Index}
		open[tp] = true
		lines = append(lines, hwLine{tp, hwEntry{lp.topicID, lp.HighWatermark()}})
	}
	for tp, e := range m.hwStart {
		switch {
		case open[tp]:
		case readTopicID(m.dir(tp)) != e.id:
			delete(m.hwStart, tp) // that incarnation's log is gone
		default:
			lines = append(lines, hwLine{tp, e})
		}
	}
	data := encodeHighWatermarks(lines)
	if bytes.Equal(data, m.hwWritten) {
		return nil
	}
	if err := klog.WriteFileAtomic(m.fs(), m.b.cfg.logDir(), hwCheckpointFile, data); err != nil {
		return err
	}
	m.hwWritten = data
	return nil
}
