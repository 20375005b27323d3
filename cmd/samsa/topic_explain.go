package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// `samsa topic describe --explain` asks each partition's leader for its
// account of the partition's replicas: a samsa broker serves it as JSON
// on its metrics listener (/v1/partitions; docs/metrics.md), whose URL the
// broker's metrics.listener config gives (DescribeConfigs). A wildcard
// host there (0.0.0.0, ::) means the broker's advertised host. Against a
// Kafka broker, or one without a metrics listener, the explanation says so.

// explainedPartition is one partition as its leader explains it (the JSON
// of a samsa broker's /v1/partitions).
type explainedPartition struct {
	Topic         string             `json:"topic"`
	Partition     int32              `json:"partition"`
	Leader        int32              `json:"leader"`
	LeaderEpoch   int32              `json:"leader_epoch"`
	ISR           []int32            `json:"isr"`
	MinISR        int32              `json:"min_insync_replicas"`
	HighWatermark int64              `json:"high_watermark"`
	Replicas      []explainedReplica `json:"replicas"`
	History       []explainedChange  `json:"history"`
	HistoryError  string             `json:"history_error"`
}

// explainedChange is one change of the partition's ISR history (kept in
// etcd by the brokers, oldest first).
type explainedChange struct {
	TimeUnixMs     int64   `json:"time_unix_ms"`
	PartitionEpoch int32   `json:"partition_epoch"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	ISR            []int32 `json:"isr"`
	PreviousLeader int32   `json:"previous_leader"`
	PreviousISR    []int32 `json:"previous_isr"`
	By             string  `json:"by"`
	Reason         string  `json:"reason"`
}

type explainedReplica struct {
	ID                     int32  `json:"id"`
	Leader                 bool   `json:"leader"`
	InISR                  bool   `json:"in_isr"`
	LogEnd                 int64  `json:"log_end"`
	LagRecords             int64  `json:"lag_records"`
	DurableToHighWatermark bool   `json:"durable_to_high_watermark"`
	LastFetchAgoMs         int64  `json:"last_fetch_ago_ms"`
	CaughtUpAgoMs          int64  `json:"caught_up_ago_ms"`
	Reason                 string `json:"reason"`
}

// partitionKey names a partition.
type partitionKey struct {
	topic     string
	partition int32
}

// explainResult is what the leaders said, by partition, and why a leader
// could not be asked; and what each replica's broker said of its replica
// (its truncation audit), by broker.
type explainResult struct {
	parts    map[partitionKey]explainedPartition
	failed   map[int32]string
	replicas map[int32]map[partitionKey]replicaState
}

// fetchExplanations asks the leaders of descs' partitions for their
// accounts.
func fetchExplanations(ctx context.Context, adm *kadm.Client, md kadm.Metadata, descs []topicDescription) explainResult {
	res := explainResult{parts: map[partitionKey]explainedPartition{}, failed: map[int32]string{},
		replicas: map[int32]map[partitionKey]replicaState{}}
	var leaders, hosts []int32
	seen, hosting, live := map[int32]bool{}, map[int32]bool{}, map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	for _, t := range descs {
		for _, p := range t.Partitions {
			if p.Leader >= 0 && !seen[p.Leader] {
				seen[p.Leader] = true
				leaders = append(leaders, p.Leader)
			}
			for _, r := range p.Replicas {
				if live[r] && !hosting[r] {
					hosting[r] = true
					hosts = append(hosts, r)
				}
			}
		}
	}
	urls, failed := brokerMetricsURLs(ctx, adm, md, hosts)
	maps.Copy(res.failed, failed)
	client := &http.Client{Timeout: 10 * time.Second}
	q := url.Values{"history": {"1"}}
	for _, t := range descs {
		q.Add("topic", t.Name)
	}
	for _, id := range leaders {
		u, ok := urls[id]
		if !ok {
			continue
		}
		var parts []explainedPartition
		if err := getJSON(ctx, client, id, u+"/v1/partitions?"+q.Encode(), &parts); err != nil {
			res.failed[id] = err.Error()
			continue
		}
		for _, p := range parts {
			res.parts[partitionKey{p.Topic, p.Partition}] = p
		}
	}
	// Each live replica's own account: its truncations.
	q.Del("history")
	for _, id := range hosts {
		u, ok := urls[id]
		if !ok {
			continue
		}
		var rs []replicaState
		if err := getJSON(ctx, client, id, u+"/v1/replicas?"+q.Encode(), &rs); err != nil {
			continue // the line then says nothing of its truncations
		}
		res.replicas[id] = map[partitionKey]replicaState{}
		for _, r := range rs {
			res.replicas[id][partitionKey{r.Topic, r.Partition}] = r
		}
	}
	return res
}

// brokerMetricsURLs finds the metrics listeners of brokers ids through
// their metrics.listener config; failed says why one has none.
func brokerMetricsURLs(ctx context.Context, adm *kadm.Client, md kadm.Metadata, ids []int32) (urls, failed map[int32]string) {
	urls, failed = map[int32]string{}, map[int32]string{}
	if len(ids) == 0 {
		return urls, failed
	}
	configs, err := adm.DescribeBrokerConfigs(ctx, ids...)
	if err != nil {
		for _, id := range ids {
			failed[id] = "describing its configs: " + err.Error()
		}
		return urls, failed
	}
	listeners := map[int32]string{}
	for _, rc := range configs {
		id, err := strconv.ParseInt(rc.Name, 10, 32)
		if err != nil || rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Key == "metrics.listener" && c.Value != nil {
				listeners[int32(id)] = *c.Value
			}
		}
	}
	for _, id := range ids {
		base, ok := listeners[id]
		if !ok || base == "" {
			failed[id] = "it reports no metrics.listener (not a samsa broker, or none configured)"
			continue
		}
		u, err := metricsURL(base, md.Brokers, id)
		if err != nil {
			failed[id] = err.Error()
			continue
		}
		urls[id] = u
	}
	return urls, failed
}

// metricsURL is a broker's metrics listener as reachable from here: a
// wildcard host becomes the broker's advertised host.
func metricsURL(listener string, brokers kadm.BrokerDetails, id int32) (string, error) {
	u, err := url.Parse(listener)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("its metrics.listener %q is not a URL", listener)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", fmt.Errorf("its metrics.listener %q has no port", listener)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		for _, b := range brokers {
			if b.NodeID == id {
				host = b.Host
			}
		}
	}
	u.Host, u.Path = net.JoinHostPort(host, port), ""
	return u.String(), nil
}

// getJSON GETs u, a path of broker id's metrics listener, and decodes its
// JSON body into v. An answer that names another broker (a loopback
// metrics.listener reached from another host) is an error.
func getJSON(ctx context.Context, client *http.Client, id int32, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	if got := resp.Header.Get("Samsa-Node-Id"); got != strconv.Itoa(int(id)) {
		return fmt.Errorf("GET %s answered as broker %q, not %d: its metrics.listener is not reachable from here as configured", u, got, id)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}
