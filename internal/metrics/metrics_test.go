package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/protocol"
)

// TestRequestErrorsCounted: every non-zero error code of a response,
// top-level or per partition, is counted under the API and Kafka's name
// of the error; zero codes are not.
func TestRequestErrorsCounted(t *testing.T) {
	m := New(&broker.Current{})
	resp := kmsg.NewPtrProduceResponse()
	for _, code := range []int16{0, kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, kerr.RecordListTooLarge.Code} {
		rt := kmsg.NewProduceResponseTopic()
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.ErrorCode = code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
	}
	m.RequestDone(protocol.RequestDone{Key: 0, Version: 9, Local: time.Millisecond, Remote: 2 * time.Millisecond, Total: 3 * time.Millisecond, Body: resp})
	if got := testutil.ToFloat64(m.requestErrors.WithLabelValues("Produce", "NOT_LEADER_FOR_PARTITION")); got != 2 {
		t.Errorf("NOT_LEADER_FOR_PARTITION counted %v times, want 2", got)
	}
	if got := testutil.ToFloat64(m.requestErrors.WithLabelValues("Produce", "RECORD_LIST_TOO_LARGE")); got != 1 {
		t.Errorf("RECORD_LIST_TOO_LARGE counted %v times, want 1", got)
	}
	if got := testutil.CollectAndCount(m.requestErrors); got != 2 {
		t.Errorf("%d error series, want 2 (no series for code 0)", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("Produce", "9")); got != 1 {
		t.Errorf("requests_total{Produce,9} = %v, want 1", got)
	}
	// A response without a body (acks=0) counts the request only.
	m.RequestDone(protocol.RequestDone{Key: 0, Version: 9})
	if got := testutil.ToFloat64(m.requests.WithLabelValues("Produce", "9")); got != 2 {
		t.Errorf("requests_total{Produce,9} = %v, want 2", got)
	}
}

// TestNotServingProbes: with no incarnation serving, /healthz is 200,
// /readyz 503, and /metrics says not registered.
func TestNotServingProbes(t *testing.T) {
	m := New(&broker.Current{})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/metrics": 200} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP samsa_broker_registered 1 while the broker's etcd session is live (its registration holds), else 0.
# TYPE samsa_broker_registered gauge
samsa_broker_registered 0
`), "samsa_broker_registered"); err != nil {
		t.Error(err)
	}
}
