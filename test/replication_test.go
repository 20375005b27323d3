package test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/coord"
)

// inProcessCluster is n brokers in this process sharing one embedded etcd.
type inProcessCluster struct {
	endpoints []string
	brokers   map[int32]*Broker
}

func startInProcessCluster(t testing.TB, n int32, opts ...func(*broker.Config)) *inProcessCluster {
	t.Helper()
	e, err := coord.StartEmbedded(context.Background(), coord.EmbeddedConfig{
		Dir: t.TempDir(), Name: "etcd", ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c := &inProcessCluster{endpoints: e.Endpoints(), brokers: map[int32]*Broker{}}
	for id := int32(1); id <= n; id++ {
		c.brokers[id] = StartBroker(t, append([]func(*broker.Config){func(cfg *broker.Config) {
			cfg.NodeID = id
			cfg.MetadataEndpoints = c.endpoints
			cfg.SessionTimeout = 3 * time.Second
		}}, opts...)...)
	}
	return c
}

func (c *inProcessCluster) checkClient(t testing.TB) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
func (c *inProcessCluster) dataDir(id int32) string { return c.brokers[id].Config.DataDir }

// serving is true for every broker: tests that stop one for good do not
// run the checker.
func (c *inProcessCluster) serving(int32) bool { return true }
func (c *inProcessCluster) etcdEndpoint() string {
	return strings.TrimPrefix(c.endpoints[0], "http://")
}

func (c *inProcessCluster) bootstrap() []string {
	var out []string
	for _, b := range c.brokers {
		out = append(out, b.Addr)
	}
	sort.Strings(out)
	return out
}

// adminWithTopic returns an admin client of the cluster (closed when the
// test ends) after creating topic with the given partitions and
// replication factor.
func (c *inProcessCluster) adminWithTopic(ctx context.Context, t testing.TB, topic string, partitions int32, rf int16) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, partitions, rf, nil, topic); err != nil {
		t.Fatal(err)
	}
	return adm
}

// Three brokers, replication factor 3, min.insync.replicas 2: acks=all
// writes are acknowledged, the followers join the ISR, and every replica's
// log is byte-identical once caught up; after the leader stops, a follower
// leads and serves every acknowledged record.
func TestReplicationThreeBrokers(t *testing.T) {
	c := startInProcessCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...), kgo.DefaultProduceTopic("r"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "r"); err != nil {
		t.Fatal(err)
	}
	const n = 500
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%04d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	isrOf := func() (leader int32, isr []int32, epoch int32) {
		md, err := adm.Metadata(ctx, "r")
		if err != nil {
			return -1, nil, -1
		}
		p := md.Topics["r"].Partitions[0]
		return p.Leader, p.ISR, p.LeaderEpoch
	}
	WaitFor(t, 30*time.Second, func() error {
		if _, isr, _ := isrOf(); len(isr) != 3 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	leader, _, epoch := isrOf()
	CheckReplication(t, c, "r")

	// The leader goes away; another replica takes over with a higher epoch.
	if err := c.brokers[leader].Close(); err != nil {
		t.Fatal(err)
	}
	var next int32
	WaitFor(t, 30*time.Second, func() error {
		l, _, e := isrOf()
		if l < 0 || l == leader || e <= epoch {
			return fmt.Errorf("leader %d epoch %d", l, e)
		}
		next = l
		return nil
	})
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.brokers[next].Addr), kgo.ConsumeTopics("r"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []string
	for len(got) < n {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records from the new leader", len(got), n)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if want := fmt.Sprintf("v%04d", i); v != want {
			t.Fatalf("record %d: got %q, want %q", i, v, want)
		}
	}
}
