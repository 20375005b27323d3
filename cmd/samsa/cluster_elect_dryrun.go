package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// `samsa cluster elect-leaders --election-type unclean --dry-run` says,
// for each partition without a live leader, which replica an unclean
// election would make leader and which records that would lose, before
// anyone decides. The choice is the controller's (internal/controller,
// PlanElection): the first replica of the assignment that is live and in
// the ISR, else the first live one. What each live replica holds comes
// from its broker's metrics listener (/v1/replicas). The records lost are
// those past the chosen replica's log end: at least up to the highest
// high watermark a live replica knows of (committed, maybe acknowledged),
// and whatever the unreachable replicas held beyond, which nobody can
// read while they are down.

// replicaState is one replica as its broker reports it (/v1/replicas).
type replicaState struct {
	Topic         string      `json:"topic"`
	Partition     int32       `json:"partition"`
	Role          string      `json:"role"`
	LeaderEpoch   int32       `json:"leader_epoch"`
	LogStart      int64       `json:"log_start"`
	LogEnd        int64       `json:"log_end"`
	HighWatermark int64       `json:"high_watermark"`
	Truncations   truncations `json:"truncations"`
}

// truncations is a replica's truncation audit since it was opened on its
// broker.
type truncations struct {
	Count            int64 `json:"count"`
	Removed          int64 `json:"removed"`
	RemovedCommitted int64 `json:"removed_committed"`
	LastUnixMs       int64 `json:"last_unix_ms"`
}

// dryRunLine is the verdict on one partition.
type dryRunLine struct {
	topic     string
	partition int32
	text      string
}

// uncleanDryRun builds the verdicts for the partitions of set (every
// partition when set is nil).
func uncleanDryRun(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet) ([]dryRunLine, error) {
	md, err := adm.Metadata(ctx, set.Topics()...)
	if err != nil {
		return nil, err
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	var liveIDs []int32
	for id := range live {
		liveIDs = append(liveIDs, id)
	}
	slices.Sort(liveIDs)
	urls, failed := brokerMetricsURLs(ctx, adm, md, liveIDs)
	client := &http.Client{Timeout: 10 * time.Second}
	states := map[int32]map[partitionKey]replicaState{}
	for id, u := range urls {
		var rs []replicaState
		if err := getJSON(ctx, client, id, u+"/v1/replicas", &rs); err != nil {
			failed[id] = err.Error()
			continue
		}
		states[id] = map[partitionKey]replicaState{}
		for _, r := range rs {
			states[id][partitionKey{r.Topic, r.Partition}] = r
		}
	}
	var out []dryRunLine
	for _, t := range md.Topics.Sorted() {
		if t.Err != nil {
			out = append(out, dryRunLine{t.Topic, -1, "cannot describe: " + t.Err.Error()})
			continue
		}
		for _, p := range t.Partitions.Sorted() {
			if set != nil && len(set[t.Topic]) > 0 {
				if _, asked := set[t.Topic][p.Partition]; !asked {
					continue
				}
			}
			out = append(out, dryRunLine{t.Topic, p.Partition, dryRunVerdict(partitionKey{t.Topic, p.Partition}, p, live, states, failed)})
		}
	}
	return out, nil
}

// dryRunVerdict says what an unclean election of one partition would do.
func dryRunVerdict(key partitionKey, p kadm.PartitionDetail, live map[int32]bool, states map[int32]map[partitionKey]replicaState, failed map[int32]string) string {
	if p.Leader >= 0 && live[p.Leader] {
		return fmt.Sprintf("has a live leader (%d): an unclean election would not change it", p.Leader)
	}
	chosen, clean := int32(-1), false
	for _, r := range p.Replicas {
		if live[r] && slices.Contains(p.ISR, r) {
			chosen, clean = r, true
			break
		}
	}
	if chosen < 0 {
		for _, r := range p.Replicas {
			if live[r] {
				chosen = r
				break
			}
		}
	}
	if chosen < 0 {
		return fmt.Sprintf("offline, and no replica of %v is live: nothing can be elected", p.Replicas)
	}
	if clean {
		return fmt.Sprintf("would elect %d, a live member of the ISR %v: nothing committed is lost (a clean election)", chosen, p.ISR)
	}
	st, ok := states[chosen][key]
	if !ok {
		why := failed[chosen]
		if why == "" {
			why = "it reports no replica of the partition"
		}
		return fmt.Sprintf("would elect %d, outside the ISR %v; its log end is unknown: %s", chosen, p.ISR, why)
	}
	// The highest high watermark a live replica knows of: records below
	// it were committed.
	committed := st.HighWatermark
	var down []int32
	for _, r := range p.Replicas {
		if s, ok := states[r][key]; ok {
			committed = max(committed, s.HighWatermark)
		} else if r != chosen {
			down = append(down, r)
		}
	}
	text := fmt.Sprintf("would elect %d, outside the ISR %v (log %d to %d)", chosen, p.ISR, st.LogStart, st.LogEnd)
	if committed > st.LogEnd {
		text += fmt.Sprintf(": LOSES offsets %d to %d, committed (a producer may have had them acknowledged)", st.LogEnd, committed-1)
	} else {
		text += ": loses no record a live replica knows to be committed"
	}
	if len(down) > 0 {
		text += fmt.Sprintf(", and whatever replicas %v held from offset %d on", down, st.LogEnd)
	}
	return text
}
