package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scrape reads a broker's /metrics and returns the metric families.
func scrape(t testing.TB, base string) (map[string]*dto.MetricFamily, error) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// metricSum sums the samples of a family (counter, gauge, or a
// histogram's count) whose labels include want.
func metricSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// clusterMetricSum sums a metric over the given brokers of c.
func clusterMetricSum(t testing.TB, c *Cluster, ids []int32, name string, want map[string]string) (float64, error) {
	sum := 0.0
	for _, id := range ids {
		fams, err := scrape(t, c.Broker(id).Proc.MetricsURL)
		if err != nil {
			return 0, fmt.Errorf("broker %d: %w", id, err)
		}
		sum += metricSum(fams, name, want)
	}
	return sum, nil
}

// getJSONBody GETs url and decodes its JSON body into v.
func getJSONBody(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// httpStatus GETs url and returns the status code and body.
func httpStatus(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// TestMetricsCluster runs three `samsa server` processes, each with its
// metrics listener, and reads their /metrics, /healthz and /readyz as an
// operator's Prometheus and probes would: records in and out count what
// the clients produced and consumed, the request metrics see the
// produces, the partition gauges go from healthy to under-replicated and
// at min ISR when a broker stops and back when it returns (an ISR
// expansion counted), and an error answered to a client is counted.
func TestMetricsCluster(t *testing.T) {
	c := StartCluster(t, 3)
	all := c.IDs()
	for _, id := range all {
		base := c.Broker(id).Proc.MetricsURL
		if code, body, err := httpStatus(base + "/healthz"); err != nil || code != http.StatusOK {
			t.Fatalf("broker %d /healthz: %d %q %v", id, code, body, err)
		}
		WaitFor(t, 30*time.Second, func() error {
			code, body, err := httpStatus(base + "/readyz")
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("broker %d /readyz: %d %q", id, code, body)
			}
			return err
		})
	}

	const topic, partitions, records = "metered", 3, 300
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := c.Admin()
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "record-%03d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	for got := 0; got < records; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	on := map[string]string{"topic": topic}
	WaitFor(t, 30*time.Second, func() error {
		in, err := clusterMetricSum(t, c, all, "samsa_topic_messages_in_total", on)
		if err == nil && in != records {
			err = fmt.Errorf("samsa_topic_messages_in_total = %v, want %d", in, records)
		}
		return err
	})
	bytesIn, err := clusterMetricSum(t, c, all, "samsa_topic_bytes_in_total", on)
	if err != nil {
		t.Fatal(err)
	}
	bytesOut, err := clusterMetricSum(t, c, all, "samsa_topic_bytes_out_total", on)
	if err != nil {
		t.Fatal(err)
	}
	if bytesIn < float64(records*len("record-000")) || bytesOut < bytesIn {
		t.Errorf("bytes in %v, out %v: want in ≥ the records' values and out ≥ in (the consumer read everything)", bytesIn, bytesOut)
	}
	for _, m := range []struct {
		name string
		want map[string]string
	}{
		{"samsa_replication_bytes_out_total", nil},
		{"samsa_requests_total", map[string]string{"api": "Produce"}},
		{"samsa_request_duration_seconds", map[string]string{"api": "Produce", "phase": "remote"}},
		{"samsa_log_flush_duration_seconds", nil},
		{"samsa_etcd_session_renewal_seconds", map[string]string{"outcome": "ok"}},
		{"samsa_request_duration_seconds", map[string]string{"api": "Produce", "phase": "response_send"}},
		{"samsa_request_duration_seconds", map[string]string{"api": "Fetch", "phase": "response_send"}},
		{"samsa_etcd_request_duration_seconds", map[string]string{"method": "Txn", "outcome": "ok"}},
		{"samsa_etcd_request_duration_seconds", map[string]string{"method": "Range", "outcome": "ok"}},
	} {
		if v, err := clusterMetricSum(t, c, all, m.name, m.want); err != nil || v <= 0 {
			t.Errorf("%s%v = %v (%v), want > 0", m.name, m.want, v, err)
		}
	}
	if v, err := clusterMetricSum(t, c, all, "samsa_active_controller", nil); err != nil || v != 1 {
		t.Errorf("samsa_active_controller summed over the cluster = %v (%v), want 1", v, err)
	}
	if v, err := clusterMetricSum(t, c, all, "samsa_high_watermark", on); err != nil || v < records {
		// Every replica's high watermark; the leaders' sum to records.
		t.Errorf("samsa_high_watermark summed = %v (%v), want ≥ %d", v, err, records)
	}
	WaitFor(t, 30*time.Second, func() error {
		v, err := clusterMetricSum(t, c, all, "samsa_under_replicated_partitions", nil)
		if err == nil && v != 0 {
			err = fmt.Errorf("samsa_under_replicated_partitions = %v with every broker up", v)
		}
		return err
	})

	// An error answered to a client is counted.
	if _, err := adm.CreateTopic(ctx, partitions, 3, nil, topic); err == nil {
		t.Fatal("creating the topic again succeeded")
	}
	if v, err := clusterMetricSum(t, c, all, "samsa_request_errors_total",
		map[string]string{"api": "CreateTopics", "error": "TOPIC_ALREADY_EXISTS"}); err != nil || v < 1 {
		t.Errorf("TOPIC_ALREADY_EXISTS answers counted: %v (%v), want ≥ 1", v, err)
	}

	// Broker 3 stops: every partition of the topic (RF 3) is
	// under-replicated and at min ISR (2 of 3) on the survivors.
	expandsBefore, err := clusterMetricSum(t, c, all, "samsa_isr_expands_total", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(3)
	up := []int32{1, 2}
	WaitFor(t, 60*time.Second, func() error {
		under, err := clusterMetricSum(t, c, up, "samsa_under_replicated_partitions", nil)
		if err != nil {
			return err
		}
		atMin, err := clusterMetricSum(t, c, up, "samsa_at_min_isr_partitions", nil)
		if err != nil {
			return err
		}
		if under < partitions || atMin < partitions {
			return fmt.Errorf("under-replicated %v, at min ISR %v; want ≥ %d each with broker 3 down", under, atMin, partitions)
		}
		return nil
	})
	// It returns: the leaders take it back into the ISRs (expansions
	// counted) and nothing is under-replicated any more.
	c.Restart(3)
	WaitFor(t, 90*time.Second, func() error {
		under, err := clusterMetricSum(t, c, all, "samsa_under_replicated_partitions", nil)
		if err != nil {
			return err
		}
		expands, err := clusterMetricSum(t, c, all, "samsa_isr_expands_total", nil)
		if err != nil {
			return err
		}
		if under != 0 || expands < expandsBefore+partitions {
			return fmt.Errorf("under-replicated %v, ISR expansions %v (before %v); want 0 and ≥ %d more", under, expands, expandsBefore, partitions)
		}
		code, body, err := httpStatus(c.Broker(3).Proc.MetricsURL + "/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("broker 3 /readyz: %d %q", code, body)
		}
		return err
	})
	// A clean stop and restart truncates nothing committed.
	if v, err := clusterMetricSum(t, c, all, "samsa_truncated_committed_records_total", nil); err != nil || v != 0 {
		t.Errorf("samsa_truncated_committed_records_total = %v (%v) after a clean restart, want 0", v, err)
	}
}
