package test

// A group of three consumers of one client library shares a six-partition
// topic and consumes every record exactly once between them, for sarama
// and kafka-go (franz-go: groups_test.go; confluent-kafka-go:
// groups_confluent_test.go), with each assignment strategy they offer.

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

	"github.com/samsa-io/samsa/internal/broker"
)

// groupBroker is a single broker with the group tests' settings.
func groupBroker(t testing.TB) *Broker {
	return StartBroker(t, func(cfg *broker.Config) {
		cfg.Groups.InitialRebalanceDelay = 0
		cfg.Groups.MinSessionTimeout = time.Second
		cfg.Groups.Partitions = 6
	})
}

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
	by   map[int]int
}

func newTally() *tally { return &tally{seen: map[string]int{}, by: map[int]int{}} }

func (c *tally) add(consumer int, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[value]++
	c.by[consumer]++
}

// wait waits until every value in want was consumed, then checks each was
// consumed once and every consumer consumed something.
func (c *tally) wait(t testing.TB, want map[string]bool, consumers int) {
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
			return fmt.Errorf("%d of %d records consumed (per consumer %v)", n, len(want), c.by)
		}
		return nil
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	for v := range want {
		if c.seen[v] != 1 {
			t.Errorf("%s consumed %d times", v, c.seen[v])
		}
	}
	for i := range consumers {
		if c.by[i] == 0 {
			t.Errorf("consumer %d consumed nothing: %v", i, c.by)
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
	}
	return nil
}

func TestGroupSarama(t *testing.T) {
	strategies := []struct {
		name string
		s    sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange()},
		{"roundrobin", sarama.NewBalanceStrategyRoundRobin()},
		{"sticky", sarama.NewBalanceStrategySticky()},
	}
	b := groupBroker(t)
	for _, st := range strategies {
		t.Run(st.name, func(t *testing.T) {
			ctx := testContext(t, 90*time.Second)
			topic, group := "sarama-group-"+st.name, "sarama-"+st.name
			produce := sharedTopic(t, ctx, b.Addr, topic)
			c := newTally()
			cctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			for i := range 3 {
				cfg := saramaConfig(sarama.V3_6_0_0)
				cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
				cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{st.s}
				cfg.Consumer.Group.Session.Timeout = 6 * time.Second
				cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
				cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
				cg, err := sarama.NewConsumerGroup([]string{b.Addr}, group, cfg)
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer cg.Close()
					for cctx.Err() == nil {
						if err := cg.Consume(cctx, []string{topic}, saramaHandler{i, c}); err != nil && cctx.Err() == nil {
							t.Errorf("sarama consumer %d: %v", i, err)
							return
						}
					}
				}()
			}
			waitGroupShared(t, ctx, b.Addr, group, 3)
			c.wait(t, produce(50), 3)
		})
	}
}

func TestGroupKafkaGo(t *testing.T) {
	b := groupBroker(t)
	for _, st := range []struct {
		name string
		s    kafka.GroupBalancer
	}{{"range", kafka.RangeGroupBalancer{}}, {"roundrobin", kafka.RoundRobinGroupBalancer{}}} {
		t.Run(st.name, func(t *testing.T) {
			ctx := testContext(t, 90*time.Second)
			topic, group := "kafkago-group-"+st.name, "kafkago-"+st.name
			produce := sharedTopic(t, ctx, b.Addr, topic)
			c := newTally()
			cctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			for i := range 3 {
				r := kafka.NewReader(kafka.ReaderConfig{
					Brokers:           []string{b.Addr},
					GroupID:           group,
					Topic:             topic,
					GroupBalancers:    []kafka.GroupBalancer{st.s},
					StartOffset:       kafka.FirstOffset,
					MaxWait:           200 * time.Millisecond,
					SessionTimeout:    6 * time.Second,
					HeartbeatInterval: 500 * time.Millisecond,
				})
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer r.Close()
					for {
						m, err := r.ReadMessage(cctx) // commits synchronously
						if err != nil {
							return
						}
						c.add(i, string(m.Value))
					}
				}()
			}
			waitGroupShared(t, ctx, b.Addr, group, 3)
			c.wait(t, produce(50), 3)
		})
	}
}
