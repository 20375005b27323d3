package test

// Consumer groups with sarama and kafka-go (franz-go: groups_test.go;
// confluent-kafka-go: groups_confluent_test.go), with each assignment
// strategy they offer, through one scenario (runGroupScenario).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sharedTopic creates a topic of six partitions and returns a producer
// helper that writes n unique values to every partition.
func sharedTopic(t testing.TB, ctx context.Context, addr, topic string) func(n int) map[string]bool {
	t.Helper()
	kcl := newKgoClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if _, err := kadm.NewClient(kcl).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	return func(n int) map[string]bool {
		want := map[string]bool{}
		var recs []*kgo.Record
		for p := range int32(6) {
			for range n {
				v := fmt.Sprintf("%s-%d-%s", topic, p, randomSuffix())
				want[v] = true
				recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
			}
		}
		if err := kcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return want
	}
}

// waitGroupShared waits until group is Stable with n members, each
// assigned at least one partition.
func waitGroupShared(t testing.TB, ctx context.Context, addr, group string, n int) {
	t.Helper()
	adm := kadm.NewClient(newKgoClient(t, addr))
	WaitFor(t, 60*time.Second, func() error {
		dg, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g := dg[group]
		if g.State != "Stable" || len(g.Members) != n {
			return fmt.Errorf("group %s: %s with %d members, want Stable with %d", group, g.State, len(g.Members), n)
		}
		for _, m := range g.Members {
			a, ok := m.Assigned.AsConsumer()
			if !ok || len(a.Topics) == 0 {
				return fmt.Errorf("member %s has no partitions", m.MemberID)
			}
		}
		return nil
	})
}

// tally counts what each consumer of a group consumed.
type tally struct {
	mu   sync.Mutex
	seen map[string]int
	by   map[int][]string
}

func newTally() *tally { return &tally{seen: map[string]int{}, by: map[int][]string{}} }

func (c *tally) add(consumer int, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[value]++
	c.by[consumer] = append(c.by[consumer], value)
}

// count is how many records consumer consumed.
func (c *tally) count(consumer int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by[consumer])
}

// wait waits until every value in want was consumed and returns how many
// were consumed more than once.
func (c *tally) wait(t testing.TB, want map[string]bool) (dups int) {
	t.Helper()
	WaitFor(t, 60*time.Second, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for v := range want {
			if c.seen[v] > 0 {
				n++
			}
		}
		if n < len(want) {
			return fmt.Errorf("%d of %d records consumed", n, len(want))
		}
		return nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	for v := range want {
		if c.seen[v] > 1 {
			dups++
		}
	}
	return dups
}

// groupConsumer starts consumer id of group on topic, identified by
// clientID, adding what it consumes to c and committing as it goes; stop
// closes it cleanly (it leaves the group).
type groupConsumer func(t *testing.T, ctx context.Context, bootstrap []string, group, topic, clientID string, id int, c *tally) (stop func())

// runGroupScenario drives one client library's consumers through a
// group's life on a three-broker cluster: three share six partitions and
// consume everything exactly once; one leaves and the other two take its
// partitions; one dies (cut from every broker, it stops heartbeating) and
// the last takes everything after the session timeout; the last stops and
// a new consumer resumes exactly at the group's committed offsets.
func runGroupScenario(t *testing.T, lib string, start groupConsumer) {
	c := StartCluster(t, 3, groupClusterOverrides)
	ctx := testContext(t, 150*time.Second)
	topic, group := lib+"-topic", lib+"-group"
	bootstrap := c.bootstrapList()
	produce := sharedTopic(t, ctx, bootstrap[0], topic)
	tl := newTally()
	clientID := func(i int) string { return fmt.Sprintf("%s-consumer-%d", lib, i) }
	stops := map[int]func(){}
	for i := range 3 {
		stops[i] = start(t, ctx, bootstrap, group, topic, clientID(i), i, tl)
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	waitGroupShared(t, ctx, bootstrap[0], group, 3)
	if dups := tl.wait(t, produce(50)); dups != 0 {
		t.Fatalf("%d records consumed twice by a stable group", dups)
	}
	for i := range 3 {
		if tl.count(i) == 0 {
			t.Errorf("consumer %d consumed nothing", i)
		}
	}

	// Consumer 2 leaves.
	stops[2]()
	delete(stops, 2)
	waitGroupShared(t, ctx, bootstrap[0], group, 2)
	if dups := tl.wait(t, produce(20)); dups != 0 {
		t.Fatalf("%d records consumed twice after a member left", dups)
	}

	// Consumer 1 dies: every broker drops its traffic.
	for _, id := range c.IDs() {
		c.Broker(id).Kafka.BlackholePeer(clientID(1))
	}
	died := time.Now()
	waitGroupShared(t, ctx, bootstrap[0], group, 1)
	tl.wait(t, produce(20))
	t.Logf("%s: a dead member's partitions were taken over and consumed %v after it died", lib, time.Since(died).Round(time.Millisecond))
	for _, id := range c.IDs() {
		c.Broker(id).Kafka.HealPeer(clientID(1))
	}
	stops[1]()
	delete(stops, 1)

	// Consumer 0 stops; a new one resumes at the committed offsets: it
	// reads the new records and none of the old.
	stops[0]()
	delete(stops, 0)
	newest := produce(20)
	stops[3] = start(t, ctx, bootstrap, group, topic, clientID(3), 3, tl)
	tl.wait(t, newest)
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, v := range tl.by[3] {
		if !newest[v] {
			t.Errorf("the restarted consumer read %s again: committed offsets not resumed", v)
		}
	}
}

// saramaHandler counts a sarama group member's records and marks them.
type saramaHandler struct {
	id int
	c  *tally
}

func (h saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.c.add(h.id, string(m.Value))
		s.MarkMessage(m, "")
		s.Commit()
	}
	return nil
}

func TestGroupSarama(t *testing.T) {
	for _, st := range []struct {
		name string
		s    sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange()},
		{"roundrobin", sarama.NewBalanceStrategyRoundRobin()},
		{"sticky", sarama.NewBalanceStrategySticky()},
	} {
		t.Run(st.name, func(t *testing.T) {
			runGroupScenario(t, "sarama-"+st.name, func(t *testing.T, ctx context.Context, bootstrap []string, group, topic, clientID string, id int, c *tally) func() {
				cfg := saramaConfig(sarama.V3_6_0_0)
				cfg.ClientID = clientID
				cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
				cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{st.s}
				cfg.Consumer.Group.Session.Timeout = 3 * time.Second
				cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
				cfg.Consumer.Offsets.AutoCommit.Enable = false
				cg, err := sarama.NewConsumerGroup(bootstrap, group, cfg)
				if err != nil {
					t.Fatal(err)
				}
				cctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for cctx.Err() == nil {
						if err := cg.Consume(cctx, []string{topic}, saramaHandler{id, c}); err != nil && cctx.Err() == nil {
							time.Sleep(100 * time.Millisecond) // a retry pace, not synchronisation
						}
					}
				}()
				return sync.OnceFunc(func() { cancel(); <-done; cg.Close() })
			})
		})
	}
}

func TestGroupKafkaGo(t *testing.T) {
	for _, st := range []struct {
		name string
		s    kafka.GroupBalancer
	}{{"range", kafka.RangeGroupBalancer{}}, {"roundrobin", kafka.RoundRobinGroupBalancer{}}} {
		t.Run(st.name, func(t *testing.T) {
			runGroupScenario(t, "kafkago-"+st.name, func(t *testing.T, ctx context.Context, bootstrap []string, group, topic, clientID string, id int, c *tally) func() {
				r := kafka.NewReader(kafka.ReaderConfig{
					Brokers:           bootstrap,
					GroupID:           group,
					Topic:             topic,
					GroupBalancers:    []kafka.GroupBalancer{st.s},
					StartOffset:       kafka.FirstOffset,
					MaxWait:           200 * time.Millisecond,
					SessionTimeout:    3 * time.Second,
					HeartbeatInterval: 300 * time.Millisecond,
					Dialer:            &kafka.Dialer{ClientID: clientID, Timeout: 5 * time.Second},
				})
				cctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for {
						m, err := r.ReadMessage(cctx) // commits synchronously
						if err != nil {
							if cctx.Err() != nil {
								return
							}
							continue
						}
						c.add(id, string(m.Value))
					}
				}()
				return sync.OnceFunc(func() { cancel(); <-done; r.Close() })
			})
		})
	}
}
