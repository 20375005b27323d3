package web

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/broker"
)

func newTestConsole() *Console {
	return New(&broker.Current{}, func() map[string]TopicTotals { return nil }, slog.Default())
}

// renderPage renders one page template with data, as serve does.
func renderPage(t *testing.T, c *Console, name string, data any) string {
	t.Helper()
	rec := httptest.NewRecorder()
	c.render(rec, name, page{Title: name, NodeID: 1, Section: name, Now: time.Now(), Data: data})
	return rec.Body.String()
}

// TestPagesRenderEdgeCases renders the pages with the states a real
// cluster shows rarely: an offline partition with no leader, a leader
// that could not be asked, a leader moving, a group whose lag is
// incomplete, and names that need escaping (group names are free text).
func TestPagesRenderEdgeCases(t *testing.T) {
	c := newTestConsole()
	topic := broker.TopicView{Name: "orders", Partitions: []broker.PartitionView{
		{Partition: 0, Leader: -1, Replicas: []int32{2, 3}, Dead: []int32{2, 3}, Health: broker.Offline},
		{Partition: 1, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, Health: broker.UnderReplicated},
		{Partition: 2, Leader: 4, Replicas: []int32{3, 4}, ISR: []int32{3, 4}, Health: broker.Healthy, LeaderMoved: true},
		{Partition: 3, Leader: 5, Replicas: []int32{5}, ISR: []int32{5}, Health: broker.Healthy},
	}}
	explain := broker.PartitionExplain{Topic: "orders", Partition: 1, Leader: 1, LeaderEpoch: 7, ISR: []int32{1}, MinISR: 2,
		HighWatermark: 42, Replicas: []broker.ReplicaView{
			{ID: 1, Leader: true, InISR: true, LogEnd: 42, DurableToHighWatermark: true, LastFetchAgoMs: -1, CaughtUpAgoMs: -1},
			{ID: 2, LogEnd: -1, LastFetchAgoMs: -1, CaughtUpAgoMs: -1, Reason: "its broker is not registered (session lost or stopped)"},
		}}
	history := map[int32][]broker.ISRChange{1: {
		{TimeUnixMs: 3_000, PartitionEpoch: 4, Leader: 1, ISR: []int32{1}, PreviousLeader: 1, PreviousISR: []int32{1, 2},
			By: "controller 1", Reason: "broker 2 is not registered"},
	}, 0: {
		{TimeUnixMs: 1_000, PartitionEpoch: 1, Leader: 2, LeaderEpoch: 0, ISR: []int32{2, 3}, PreviousLeader: 2, PreviousISR: []int32{2},
			By: "leader 2", Reason: "replica 3 added: caught up"},
		{TimeUnixMs: 2_000, PartitionEpoch: 2, Leader: -1, LeaderEpoch: 1, ISR: []int32{2, 3}, PreviousLeader: 2, PreviousISR: []int32{2, 3},
			By: "controller 1", Reason: "no eligible ISR member: partition offline"},
	}}
	body := renderPage(t, c, "topic", newTopicData(topicRow{TopicView: topic, Replication: 2},
		map[int32]broker.PartitionExplain{1: explain},
		map[int32]string{4: "GET http://b4:9644/v1/partitions: connection refused"}, history, nil,
		map[int32][]broker.ReplicaState{
			1: {{Topic: "orders", Partition: 1, Truncations: broker.Truncations{Count: 2, Removed: 7, RemovedCommitted: 3}}},
			2: {{Topic: "orders", Partition: 1}},
		}))
	for _, want := range []string{
		`id="partition-0" data-health="offline"`,
		"No leader: nothing to ask",
		`id="partition-1" data-health="under-replicated"`,
		"high watermark 42, min.insync.replicas 2",
		"out of ISR</span>: its broker is not registered",
		"Leader 4 could not be asked: GET http://b4:9644/v1/partitions: connection refused",
		`title="the leader is not the preferred (first) replica">moved`,
		"Leader 5 does not lead it now",
		// The offline partition still shows its history, newest first.
		`id="history-0"`,
		"ISR history: the last 2 changes, newest first",
		"ISR history: no change since the partition was created.",
		// When replica 2 left, from the history; the replicas' audits.
		"(out since 1970-01-01 00:00:03 UTC: broker 2 is not registered)",
		`<td class="truncations">2: 7 records, <span class="offline-text">3 below its HW</span></td>`,
		`<td class="truncations">none</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("topic page lacks %q", want)
		}
	}
	if newest, oldest := strings.Index(body, "partition offline"), strings.Index(body, "replica 3 added"); newest < 0 || oldest < newest {
		t.Errorf("the history is not newest first: %d %d", newest, oldest)
	}
	if !strings.Contains(body, "2 → none (epoch 1)") {
		t.Errorf("the offline change does not show the leader lost")
	}
	body = renderPage(t, c, "topic", newTopicData(topicRow{TopicView: topic}, nil, nil, nil, errors.New("etcd unreachable"), nil))
	if !strings.Contains(body, "ISR history not read: etcd unreachable") {
		t.Errorf("a failed history read is not shown")
	}
	if got := topic.Health(); got != broker.Offline {
		t.Errorf("topic health %q, want offline (its worst partition's)", got)
	}

	evil := `<script>alert(1)</script>`
	body = renderPage(t, c, "groups", groupsData{Groups: []groupRow{
		{Name: evil, State: "Stable", Members: 1, Lag: 5, LagKnown: false, Err: "NOT_COORDINATOR"},
	}})
	if strings.Contains(body, evil) {
		t.Errorf("a group name was not escaped: %s", body)
	}
	if !strings.Contains(body, "5+ <span") || !strings.Contains(body, "incomplete") {
		t.Errorf("an incomplete lag is not marked as such: %s", body)
	}
	if !strings.Contains(body, `href="/groups/%3Cscript%3Ealert%281%29%3C%2Fscript%3E"`) {
		t.Errorf("the group's link is not path-escaped: %s", body)
	}
}

// TestServeWithoutBroker: between incarnations every page answers 503
// with a page that says why, and unknown paths are 404s.
func TestServeWithoutBroker(t *testing.T) {
	mux := http.NewServeMux()
	newTestConsole().Register(mux)
	for path, want := range map[string]int{
		"/":                     http.StatusServiceUnavailable,
		"/topics/orders":        http.StatusServiceUnavailable,
		"/groups":               http.StatusServiceUnavailable,
		"/groups/g":             http.StatusServiceUnavailable,
		"/static/console.css":   http.StatusOK,
		"/static/console.js":    http.StatusOK,
		"/static/missing.css":   http.StatusNotFound,
		"/no-such-console-page": http.StatusNotFound,
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d", path, rec.Code, want)
		}
		if want == http.StatusServiceUnavailable && !strings.Contains(rec.Body.String(), "starting or registering again") {
			t.Errorf("GET %s: the 503 page does not say why: %s", path, rec.Body.String())
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
