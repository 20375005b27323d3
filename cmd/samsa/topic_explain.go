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
// could not be asked.
type explainResult struct {
	parts  map[partitionKey]explainedPartition
	failed map[int32]string
}

// fetchExplanations asks the leaders of descs' partitions for their
// accounts.
func fetchExplanations(ctx context.Context, adm *kadm.Client, md kadm.Metadata, descs []topicDescription) explainResult {
	res := explainResult{parts: map[partitionKey]explainedPartition{}, failed: map[int32]string{}}
	var leaders []int32
	seen := map[int32]bool{}
	for _, t := range descs {
		for _, p := range t.Partitions {
			if p.Leader >= 0 && !seen[p.Leader] {
				seen[p.Leader] = true
				leaders = append(leaders, p.Leader)
			}
		}
	}
	urls, failed := brokerMetricsURLs(ctx, adm, md, leaders)
	maps.Copy(res.failed, failed)
	client := &http.Client{Timeout: 10 * time.Second}
	q := url.Values{"history": {"1"}}
	for _, t := range descs {
		q.Add("topic", t.Name)
	}
	for id, u := range urls {
		var parts []explainedPartition
		if err := getJSON(ctx, client, u+"/v1/partitions?"+q.Encode(), &parts); err != nil {
			res.failed[id] = err.Error()
			continue
		}
		for _, p := range parts {
			res.parts[partitionKey{p.Topic, p.Partition}] = p
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

// getJSON GETs u and decodes its JSON body into v.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
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
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}
