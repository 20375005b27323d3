package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// formatExplanation renders the --explain lines of one partition, each
// indented under the partition's line, newline included.
func formatExplanation(topic string, p partitionDescription, res explainResult) string {
	var b strings.Builder
	if p.Leader < 0 {
		b.WriteString("\t\tno leader: nothing to ask\n")
		return b.String()
	}
	e, ok := res.parts[partitionKey{topic, p.Partition}]
	if !ok {
		why := res.failed[p.Leader]
		if why == "" {
			why = "it does not lead the partition now"
		}
		fmt.Fprintf(&b, "\t\tleader %d not asked: %s\n", p.Leader, why)
		return b.String()
	}
	fmt.Fprintf(&b, "\t\tleader %d in epoch %d: high watermark %d, min.insync.replicas %d\n", e.Leader, e.LeaderEpoch, e.HighWatermark, e.MinISR)
	for _, r := range e.Replicas {
		b.WriteString("\t\tReplica ")
		b.WriteString(strconv.Itoa(int(r.ID)))
		b.WriteString(": ")
		var parts []string
		switch {
		case r.Leader:
			parts = append(parts, "leader")
		case r.InISR:
			parts = append(parts, "in ISR")
		default:
			out := "OUT OF ISR: " + r.Reason
			if left, ok := leftISR(e.History, r.ID); ok {
				out += " (out since " + time.UnixMilli(left.TimeUnixMs).UTC().Format(time.RFC3339) + ": " + left.Reason + ")"
			}
			parts = append(parts, out)
		}
		if r.LogEnd >= 0 {
			parts = append(parts, "log end "+strconv.FormatInt(r.LogEnd, 10))
		} else {
			parts = append(parts, "log end unknown")
		}
		if !r.Leader && r.LogEnd >= 0 {
			parts = append(parts, "lag "+strconv.FormatInt(r.LagRecords, 10))
		}
		if !r.Leader {
			parts = append(parts, "last fetch "+agoString(r.LastFetchAgoMs))
		}
		if r.DurableToHighWatermark {
			parts = append(parts, "fsync'd to the high watermark")
		} else {
			parts = append(parts, "not fsync'd to the high watermark")
		}
		if rs, ok := res.replicas[r.ID][partitionKey{topic, p.Partition}]; ok {
			parts = append(parts, formatTruncations(rs.Truncations))
		}
		b.WriteString(strings.Join(parts, ", "))
		b.WriteByte('\n')
	}
	writeHistory(&b, e)
	return b.String()
}

// leftISR finds the newest change of history that took replica id out of
// the ISR.
func leftISR(history []explainedChange, id int32) (explainedChange, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		c := history[i]
		if slices.Contains(c.PreviousISR, id) && !slices.Contains(c.ISR, id) {
			return c, true
		}
	}
	return explainedChange{}, false
}

// formatTruncations renders a replica's truncation audit.
func formatTruncations(t truncations) string {
	if t.Count == 0 {
		return "no truncation since its broker opened it"
	}
	return fmt.Sprintf("%d truncations since its broker opened it (last %s) removed %d records, %d of them below its high watermark",
		t.Count, time.UnixMilli(t.LastUnixMs).UTC().Format(time.RFC3339), t.Removed, t.RemovedCommitted)
}

// historyShown is how many of a partition's ISR changes --explain prints,
// newest first.
const historyShown = 5

// writeHistory renders the partition's ISR history, newest change first.
func writeHistory(b *strings.Builder, e explainedPartition) {
	switch {
	case e.HistoryError != "":
		fmt.Fprintf(b, "\t\tISR history: not read: %s\n", e.HistoryError)
		return
	case len(e.History) == 0:
		b.WriteString("\t\tISR history: no change since the partition was created\n")
		return
	}
	shown := min(len(e.History), historyShown)
	fmt.Fprintf(b, "\t\tISR history (newest first, %d of %d kept):\n", shown, len(e.History))
	for i := len(e.History) - 1; i >= len(e.History)-shown; i-- {
		b.WriteString("\t\t  ")
		b.WriteString(formatChange(e.History[i]))
		b.WriteByte('\n')
	}
}

// formatChange renders one ISR change on one line.
func formatChange(c explainedChange) string {
	leader := func(id int32) string {
		if id < 0 {
			return "none"
		}
		return strconv.Itoa(int(id))
	}
	var b strings.Builder
	b.WriteString(time.UnixMilli(c.TimeUnixMs).UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, " partition epoch %d, by %s: ", c.PartitionEpoch, c.By)
	if c.Leader != c.PreviousLeader {
		fmt.Fprintf(&b, "leader %s -> %s (leader epoch %d), ", leader(c.PreviousLeader), leader(c.Leader), c.LeaderEpoch)
	}
	fmt.Fprintf(&b, "ISR [%s] -> [%s]: %s", joinIDs(c.PreviousISR), joinIDs(c.ISR), c.Reason)
	return b.String()
}

// agoString renders a duration in milliseconds ago; -1 is never.
func agoString(ms int64) string {
	if ms < 0 {
		return "never in this leader epoch"
	}
	return (time.Duration(ms) * time.Millisecond).Round(100*time.Millisecond).String() + " ago"
}
