package log

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EpochEntry is one entry of the leader epoch cache: leader epoch Epoch
// wrote its first batch at StartOffset (or, for the latest epoch, will).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the leader epoch cache (KIP-101): epochs and start offsets,
// both strictly increasing. It is persisted as leader-epoch-checkpoint in
// Kafka's text format: a version line, a count line, then "epoch offset" per
// line.
type epochCache []EpochEntry

func (c epochCache) latest() int32 {
	if len(c) == 0 {
		return -1
	}
	return c[len(c)-1].Epoch
}

// assign records that epoch starts at offset. An epoch older than the
// latest is ignored: epochs only grow along a log, and callers that must
// not send one check first. An entry starting at or after offset describes
// no batch (an epoch assigned at the LEO that never wrote), so it is
// replaced. It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 || epoch <= c.latest() {
		return false
	}
	n := len(*c)
	for n > 0 && (*c)[n-1].StartOffset >= offset {
		n--
	}
	*c = append((*c)[:n], EpochEntry{Epoch: epoch, StartOffset: offset})
	return true
}

// truncateFromEnd removes the entries of epochs that start at or after
// offset (a truncation of the log to offset).
func (c *epochCache) truncateFromEnd(offset int64) bool {
	n := len(*c)
	for n > 0 && (*c)[n-1].StartOffset >= offset {
		n--
	}
	changed := n != len(*c)
	*c = (*c)[:n]
	return changed
}

// truncateFromStart drops the entries of epochs that ended before offset
// (the new log start offset) and moves the first remaining one to start
// there.
func (c *epochCache) truncateFromStart(offset int64) bool {
	i := 0
	for i+1 < len(*c) && (*c)[i+1].StartOffset <= offset {
		i++
	}
	changed := i > 0
	*c = slices.Delete(*c, 0, i)
	if len(*c) > 0 && (*c)[0].StartOffset < offset {
		(*c)[0].StartOffset = offset
		changed = true
	}
	return changed
}

// endOffsetFor answers OffsetsForLeaderEpoch: the largest cached epoch <=
// epoch and the offset where it ended (the next epoch's start offset, or
// the LEO for the latest epoch); (-1, -1) when epoch is below every cached
// epoch.
func (c epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	if epoch < 0 || len(c) == 0 {
		return -1, -1
	}
	if epoch == c[len(c)-1].Epoch {
		return epoch, leo
	}
	// higher is the first entry with an epoch above the one asked for.
	higher, _ := slices.BinarySearchFunc(c, epoch+1, func(e EpochEntry, t int32) int {
		return cmp.Compare(e.Epoch, t)
	})
	if higher == len(c) {
		// Above every epoch this log knows: undefined, as in Kafka.
		return -1, -1
	}
	if higher == 0 {
		// Below the earliest epoch: Kafka answers the epoch asked for and
		// the earliest epoch's start, so a follower truncates there.
		return epoch, c[0].StartOffset
	}
	return c[higher-1].Epoch, c[higher].StartOffset
}

func (c epochCache) encode() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(c))
	for _, e := range c {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return []byte(b.String())
}

func parseEpochCheckpoint(b []byte) (epochCache, error) {
	lines, err := checkpointLines(b, -1)
	if err != nil {
		return nil, err
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w: no count line", errBadCheckpoint)
	}
	n, err := strconv.Atoi(string(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: count %q for %d entries", errBadCheckpoint, lines[1], len(lines)-2)
	}
	c := make(epochCache, 0, n)
	for _, line := range lines[2:] {
		epochText, offsetText, ok := strings.Cut(string(line), " ")
		epoch, err1 := strconv.ParseInt(epochText, 10, 32)
		offset, err2 := strconv.ParseInt(offsetText, 10, 64)
		if !ok || err1 != nil || err2 != nil || epoch < 0 || offset < 0 ||
			len(c) > 0 && (int32(epoch) <= c.latest() || offset <= c[len(c)-1].StartOffset) {
			return nil, fmt.Errorf("%w: entry %q", errBadCheckpoint, line)
		}
		c = append(c, EpochEntry{Epoch: int32(epoch), StartOffset: offset})
	}
	return c, nil
}
