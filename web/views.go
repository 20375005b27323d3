package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/broker"
)

// overviewData is the overview page: brokers, a health summary and the
// topics with their throughput.
type overviewData struct {
	Cluster broker.ClusterView
	// Missing are the broker ids that replicas are assigned to but that
	// are not registered (down, or never started).
	Missing []int32
	Counts  map[string]int
	Topics  []topicRow
	// ThroughputErrors says which brokers' counters could not be read.
	ThroughputErrors map[int32]string
}

type topicRow struct {
	broker.TopicView
	Replication int
	Rate        rate
	HasRate     bool
}

func (c *Console) overview(ctx context.Context, b *broker.Broker, _ *http.Request) (string, any, error) {
	cv := b.Cluster()
	d := overviewData{Cluster: cv, Counts: map[string]int{}}
	registered := map[int32]bool{}
	for _, bv := range cv.Brokers {
		registered[bv.ID] = true
	}
	missing := map[int32]bool{}
	for _, t := range cv.Topics {
		for _, p := range t.Partitions {
			d.Counts[string(p.Health)]++
			for _, r := range p.Replicas {
				if !registered[r] {
					missing[r] = true
				}
			}
		}
	}
	for id := range missing {
		d.Missing = append(d.Missing, id)
	}
	slices.Sort(d.Missing)
	rates, errs := c.throughput(ctx, b, cv)
	d.ThroughputErrors = errs
	for _, t := range cv.Topics {
		row := topicRow{TopicView: t}
		if len(t.Partitions) > 0 {
			row.Replication = len(t.Partitions[0].Replicas)
		}
		row.Rate, row.HasRate = rates[t.Name]
		d.Topics = append(d.Topics, row)
	}
	return "cluster", d, nil
}

// topicData is a topic's page: its partitions, each with its leader's
// explanation.
type topicData struct {
	Topic      topicRow
	Partitions []partitionRow
}

// partitionRow is a partition with its leader's account of it and its
// ISR history: Explain is nil when the leader could not be asked
// (ExplainErr says why) or does not lead it (yet, or any more).
type partitionRow struct {
	broker.PartitionView
	Explain    *broker.PartitionExplain
	ExplainErr string
	History    []broker.ISRChange
	HistoryErr string
	// Truncations are the replicas' own truncation audits, by replica
	// (absent: its broker could not be asked).
	Truncations map[int32]*broker.Truncations
}

// newTopicData joins the topic's partitions with the leaders' accounts
// (by partition), the errors of those that could not be asked (by
// leader), and the partitions' ISR history (or why it could not be read).
func newTopicData(t topicRow, explain map[int32]broker.PartitionExplain, errs map[int32]string,
	history map[int32][]broker.ISRChange, historyErr error, replicas map[int32][]broker.ReplicaState) topicData {
	d := topicData{Topic: t}
	// The replicas' audits by broker and partition, indexed once.
	audits := map[int32]map[int32]*broker.Truncations{}
	for id, rs := range replicas {
		audits[id] = map[int32]*broker.Truncations{}
		for i := range rs {
			if rs[i].Topic == t.Name {
				audits[id][rs[i].Partition] = &rs[i].Truncations
			}
		}
	}
	for _, p := range t.Partitions {
		row := partitionRow{PartitionView: p, History: history[p.Partition], Truncations: map[int32]*broker.Truncations{}}
		for id, byPartition := range audits {
			if a, ok := byPartition[p.Partition]; ok {
				row.Truncations[id] = a
			}
		}
		if e, ok := explain[p.Partition]; ok {
			row.Explain = &e
		} else if p.Health != broker.Offline {
			row.ExplainErr = errs[p.Leader]
		}
		if historyErr != nil {
			row.HistoryErr = historyErr.Error()
		}
		d.Partitions = append(d.Partitions, row)
	}
	return d
}

func (c *Console) topic(ctx context.Context, b *broker.Broker, r *http.Request) (string, any, error) {
	name := r.PathValue("topic")
	cv := b.Cluster()
	i := slices.IndexFunc(cv.Topics, func(t broker.TopicView) bool { return t.Name == name })
	if i < 0 {
		return "", nil, errNotFound(fmt.Sprintf("topic %q does not exist", name))
	}
	t := cv.Topics[i]
	row := topicRow{TopicView: t}
	if len(t.Partitions) > 0 {
		row.Replication = len(t.Partitions[0].Replicas)
	}
	explain, errs := map[int32]broker.PartitionExplain{}, map[int32]string{}

	urls := metricsURLs(cv)
	var leaders []int32
	for _, p := range t.Partitions {
		if p.Health != broker.Offline && !slices.Contains(leaders, p.Leader) {
			leaders = append(leaders, p.Leader)
		}
	}
	// Everything below is asked at once, so that one slow broker costs
	// its own part of the page, not the others'.
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		rates, _ := c.throughput(ctx, b, cv)
		mu.Lock()
		defer mu.Unlock()
		row.Rate, row.HasRate = rates[name]
	})
	// Every live replica's own account (its truncation audit).
	replicas := map[int32][]broker.ReplicaState{}
	var hosts []int32
	for _, p := range t.Partitions {
		for _, r := range p.Replicas {
			if !slices.Contains(hosts, r) && !slices.Contains(p.Dead, r) {
				hosts = append(hosts, r)
			}
		}
	}
	for _, id := range hosts {
		wg.Go(func() {
			var rs []broker.ReplicaState
			var err error
			switch {
			case id == b.NodeID():
				rs = b.Replicas(name)
			case urls[id] == "":
				return
			default:
				err = c.getJSON(ctx, id, urls[id]+"/v1/replicas?topic="+url.QueryEscape(name), &rs)
			}
			if err == nil {
				mu.Lock()
				replicas[id] = rs
				mu.Unlock()
			}
		})
	}
	for _, id := range leaders {
		wg.Go(func() {
			var parts []broker.PartitionExplain
			var err error
			switch {
			case id == b.NodeID():
				parts = b.Explain(name)
			case urls[id] == "":
				err = fmt.Errorf("broker %d advertises no metrics listener", id)
			default:
				err = c.getJSON(ctx, id, urls[id]+"/v1/partitions?topic="+url.QueryEscape(name), &parts)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs[id] = err.Error()
				return
			}
			for _, pe := range parts {
				if pe.Topic == name && pe.Leader == id {
					explain[pe.Partition] = pe
				}
			}
		})
	}
	// The ISR history: read here, once (not by every leader).
	history, herr := c.isrHistory(ctx, b, t.ID)
	wg.Wait()
	return "topic " + name, newTopicData(row, explain, errs, history, herr, replicas), nil
}

// historyTTL is how long a topic's ISR history read is reused: pages
// refreshing every few seconds, in several tabs, read it from etcd about
// once per interval.
const historyTTL = 5 * time.Second

// cachedHistory is one topic's ISR history as last read.
type cachedHistory struct {
	at      time.Time
	history map[int32][]broker.ISRChange
}

// isrHistory returns the ISR history of the topic with id id, read from
// etcd at most once per historyTTL.
func (c *Console) isrHistory(ctx context.Context, b *broker.Broker, id [16]byte) (map[int32][]broker.ISRChange, error) {
	c.mu.Lock()
	h, ok := c.histories[id]
	c.mu.Unlock()
	if ok && time.Since(h.at) < historyTTL {
		return h.history, nil
	}
	history, err := b.ISRHistory(ctx, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.histories {
		if time.Since(v.at) >= historyTTL {
			delete(c.histories, k) // topics nobody looks at any more
		}
	}
	if err == nil {
		// Errors are not kept: one viewer's cancelled request must not
		// be every viewer's answer.
		c.histories[id] = cachedHistory{at: time.Now(), history: history}
	}
	return history, err
}

// metricsURLs are the registered brokers' advertised metrics listeners.
func metricsURLs(cv broker.ClusterView) map[int32]string {
	urls := map[int32]string{}
	for _, bv := range cv.Brokers {
		if bv.MetricsURL != "" {
			urls[bv.ID] = bv.MetricsURL
		}
	}
	return urls
}

// rate is a topic's throughput over the cluster, per second.
type rate struct{ BytesIn, MessagesIn, BytesOut float64 }

// sample is one broker's counters at a time and the rates since the
// sample before.
type sample struct {
	started time.Time // the incarnation the counters are of
	at      time.Time
	totals  map[string]TopicTotals
	rates   map[string]rate
}

// minSampleGap is the shortest interval rates are computed over: pages
// asked for more often show the rates of the last interval.
const minSampleGap = time.Second

// throughput reads every registered broker's counters and returns the
// topics' rates summed over the brokers, computed against each broker's
// previous sample; a topic has none until two samples of some broker
// exist. errs says which brokers could not be read.
func (c *Console) throughput(ctx context.Context, b *broker.Broker, cv broker.ClusterView) (map[string]rate, map[int32]string) {
	type result struct {
		bv     broker.BrokerView
		at     time.Time
		totals map[string]TopicTotals
		err    error
	}
	results := make([]result, len(cv.Brokers))
	var wg sync.WaitGroup
	for i, bv := range cv.Brokers {
		wg.Go(func() {
			res := result{bv: bv}
			switch {
			case bv.ID == b.NodeID():
				res.totals = c.totals()
			case bv.MetricsURL == "":
				res.err = fmt.Errorf("no metrics listener advertised")
			default:
				res.err = c.getJSON(ctx, bv.ID, bv.MetricsURL+"/v1/throughput", &res.totals)
			}
			res.at = time.Now()
			results[i] = res
		})
	}
	wg.Wait()

	c.mu.Lock()
	defer c.mu.Unlock()
	sum := map[string]rate{}
	errs := map[int32]string{}
	live := map[int32]bool{}
	for _, res := range results {
		id := res.bv.ID
		live[id] = true
		if res.err != nil {
			errs[id] = res.err.Error()
			continue
		}
		prev := c.samples[id]
		switch {
		case prev == nil || !prev.started.Equal(res.bv.Started):
			// First sample of this incarnation: no rate yet.
			c.samples[id] = &sample{started: res.bv.Started, at: res.at, totals: res.totals}
		case res.at.Sub(prev.at) >= minSampleGap:
			secs := res.at.Sub(prev.at).Seconds()
			rates := map[string]rate{}
			for topic, now := range res.totals {
				was := prev.totals[topic]
				rates[topic] = rate{
					BytesIn:    max(float64(now.BytesIn-was.BytesIn), 0) / secs,
					MessagesIn: max(float64(now.MessagesIn-was.MessagesIn), 0) / secs,
					BytesOut:   max(float64(now.BytesOut-was.BytesOut), 0) / secs,
				}
			}
			c.samples[id] = &sample{started: prev.started, at: res.at, totals: res.totals, rates: rates}
		}
		s := c.samples[id]
		if s.rates == nil {
			continue
		}
		for _, t := range cv.Topics {
			r := s.rates[t.Name] // zero when the broker saw none of it
			acc := sum[t.Name]
			acc.BytesIn += r.BytesIn
			acc.MessagesIn += r.MessagesIn
			acc.BytesOut += r.BytesOut
			sum[t.Name] = acc
		}
	}
	for id := range c.samples {
		if !live[id] {
			delete(c.samples, id)
		}
	}
	return sum, errs
}

// nodeIDHeader is the header by which a metrics listener's /v1/ answers
// name their broker (metrics.NodeIDHeader).
const nodeIDHeader = "Samsa-Node-Id"

// getJSON GETs u, broker id's metrics URL plus a path, and decodes its
// JSON body into v. An answer from another broker than id (a loopback
// metrics.listener advertised to other hosts reaches the asker itself)
// is an error, not data of id's.
func (c *Console) getJSON(ctx context.Context, id int32, u string, v any) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("broker %d's metrics URL %q is not http(s)", id, u)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	if got := resp.Header.Get(nodeIDHeader); got != strconv.Itoa(int(id)) {
		return fmt.Errorf("GET %s answered as broker %q, not %d: its metrics.listener is not reachable from here as advertised "+
			"(a localhost listener on a cluster of several hosts? bind it to a routable address or 0.0.0.0)", u, got, id)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(v)
}

// groupsData is the groups page.
type groupsData struct {
	Groups []groupRow
	Err    string
}

type groupRow struct {
	Name, State, ProtocolType, Protocol string
	Coordinator                         int32
	Members                             int
	// Lag is the sum of the partitions' lag; LagKnown is false when some
	// partition's lag could not be computed.
	Lag      int64
	LagKnown bool
	Err      string
}

func (c *Console) groups(ctx context.Context, b *broker.Broker, _ *http.Request) (string, any, error) {
	var d groupsData
	lags, err := c.lags(ctx, b, nil)
	if err != nil {
		d.Err = err.Error()
		return "consumer groups", d, nil
	}
	for _, l := range lags.Sorted() {
		d.Groups = append(d.Groups, summarize(l))
	}
	return "consumer groups", d, nil
}

func summarize(l kadm.DescribedGroupLag) groupRow {
	row := groupRow{Name: l.Group, State: l.State, ProtocolType: l.ProtocolType, Protocol: l.Protocol,
		Coordinator: l.Coordinator.NodeID, Members: len(l.Members), LagKnown: true}
	if err := l.Error(); err != nil {
		row.Err, row.LagKnown = err.Error(), false
	}
	for _, ps := range l.Lag {
		for _, ml := range ps {
			if ml.Err != nil || ml.Lag < 0 {
				row.LagKnown = false
				continue
			}
			row.Lag += ml.Lag
		}
	}
	return row
}

// lags describes groups (all the cluster's if nil) with their lag.
func (c *Console) lags(ctx context.Context, b *broker.Broker, groups []string) (kadm.DescribedGroupLags, error) {
	cl, err := b.AdminClient()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	if groups == nil {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the groups: %w", err)
		}
		groups = listed.Groups()
		if len(groups) == 0 {
			return kadm.DescribedGroupLags{}, nil
		}
	}
	lags, err := adm.Lag(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("describing the groups: %w", err)
	}
	return lags, nil
}

// groupData is one group's page: members and assignments, lag per
// partition.
type groupData struct {
	groupRow
	Members    []memberRow
	Partitions []lagRow
}

type memberRow struct {
	ID, InstanceID, ClientID, Host string
	Assigned                       []string // topic: partitions
}

type lagRow struct {
	Topic               string
	Partition           int32
	Member              string // client id and host; empty when the group is empty
	Committed, End, Lag int64
	HasCommit           bool
	Err                 string
}

func (c *Console) group(ctx context.Context, b *broker.Broker, r *http.Request) (string, any, error) {
	name := r.PathValue("group")
	lags, err := c.lags(ctx, b, []string{name})
	if err != nil {
		return "", nil, err
	}
	l, ok := lags[name]
	if !ok || l.State == "Dead" {
		return "", nil, errNotFound(fmt.Sprintf("group %q does not exist", name))
	}
	d := groupData{groupRow: summarize(l)}
	for _, m := range l.Members {
		mr := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mr.InstanceID = *m.InstanceID
		}
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				mr.Assigned = append(mr.Assigned, t.Topic+": "+fmt.Sprint(t.Partitions))
			}
		}
		d.Members = append(d.Members, mr)
	}
	for topic, ps := range l.Lag {
		for p, ml := range ps {
			row := lagRow{Topic: topic, Partition: p, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag,
				HasCommit: ml.Commit.At >= 0}
			if ml.Member != nil {
				row.Member = ml.Member.ClientID + " " + ml.Member.ClientHost
			}
			if ml.Err != nil {
				row.Err = ml.Err.Error()
			}
			d.Partitions = append(d.Partitions, row)
		}
	}
	slices.SortFunc(d.Partitions, func(a, b lagRow) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return "group " + name, d, nil
}
