package coord

import (
	"context"
	"encoding/base64"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/testutil"
)

func TestClusterIDStableAcrossClients(t *testing.T) {
	eps := sharedEtcd(t)
	cluster := clusterName(t)
	clients := []*Client{connect(t, eps, cluster), connect(t, eps, cluster), connect(t, eps, cluster)}

	// Every client asks at once; exactly one id may win.
	ids := make([]string, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { ids[i], errs[i] = c.ClusterID(testCtx(t)) })
	}
	wg.Wait()
	for i := range clients {
		if errs[i] != nil {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("client %d got cluster id %q, client 0 got %q", i, ids[i], ids[0])
		}
	}
	raw, err := base64.RawURLEncoding.DecodeString(ids[0])
	if len(ids[0]) != 22 || err != nil || len(raw) != 16 {
		t.Fatalf("cluster id %q is not a 22-character base64 UUID (err %v)", ids[0], err)
	}
	if raw[6]>>4 != 4 || raw[8]>>6 != 2 {
		t.Fatalf("cluster id %q is not a version-4 UUID", ids[0])
	}

	// A later client, and another cluster name, on the same etcd.
	later, err := connect(t, eps, cluster).ClusterID(testCtx(t))
	if err != nil || later != ids[0] {
		t.Fatalf("later client: %q, %v; want %q", later, err, ids[0])
	}
	other, err := connect(t, eps, clusterName(t)).ClusterID(testCtx(t))
	if err != nil || other == ids[0] {
		t.Fatalf("other cluster: %q, %v; want an id different from %q", other, err, ids[0])
	}
}

func TestConnectValidates(t *testing.T) {
	eps := sharedEtcd(t)
	for _, tt := range []struct {
		name      string
		endpoints []string
		cluster   string
	}{
		{"no endpoints", nil, "x"},
		{"slash in cluster", eps, "a/b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Connect(testCtx(t), tt.endpoints, tt.cluster)
			if err == nil {
				c.Close()
			}
			mustIs(t, err, ErrInvalid)
		})
	}
	c := connect(t, eps, "")
	if got, want := c.Cluster(), DefaultCluster; got != want {
		t.Fatalf("cluster %q, want %q", got, want)
	}
}

// With etcd unreachable, every call with a deadline returns promptly with
// the context's error, and calls without one are bounded by the request
// timeout.
func TestUnreachableEtcdReturnsPromptly(t *testing.T) {
	eps := sharedEtcd(t)
	p := testutil.NewProxy(t, eps[0])
	cluster := clusterName(t)
	c := connect(t, p.Endpoints(), cluster, WithRequestTimeout(time.Second))
	direct := connect(t, eps, cluster)
	topic := meta.Topic{Name: "t", ID: meta.NewTopicID(), Partitions: [][]int32{{1}}}
	if err := direct.CreateTopic(testCtx(t), topic, []meta.PartitionState{{Topic: "t", Leader: 1, ISR: []int32{1}}}); err != nil {
		t.Fatal(err)
	}
	p.SetDown(true)

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"ClusterID", func(ctx context.Context) error { _, err := c.ClusterID(ctx); return err }},
		{"Brokers", func(ctx context.Context) error { _, err := c.Brokers(ctx); return err }},
		{"RegisterBroker", func(ctx context.Context) error {
			_, err := c.RegisterBroker(ctx, meta.Broker{ID: 1}, 2*time.Second)
			return err
		}},
		{"CreateTopic", func(ctx context.Context) error {
			return c.CreateTopic(ctx, meta.Topic{Name: "u", ID: meta.NewTopicID(), Partitions: [][]int32{{1}}}, nil)
		}},
		{"DeleteTopic", func(ctx context.Context) error { return c.DeleteTopic(ctx, "t") }},
		{"UpdateTopic", func(ctx context.Context) error {
			_, err := c.UpdateTopic(ctx, "t", func(*meta.Topic) ([]meta.PartitionState, error) { return nil, nil })
			return err
		}},
		{"CASPartitionState", func(ctx context.Context) error {
			_, err := c.CASPartitionState(ctx, meta.PartitionState{Topic: "t"}, 1)
			return err
		}},
		{"AllocateProducerIDs", func(ctx context.Context) error { _, err := c.AllocateProducerIDs(ctx, 10); return err }},
		{"NewCache", func(ctx context.Context) error {
			cache, err := c.NewCache(ctx)
			if err == nil {
				cache.Close()
			}
			return err
		}},
		{"Connect", func(ctx context.Context) error {
			c2, err := Connect(ctx, p.Endpoints(), cluster, WithLogger(quietLogger()))
			if err == nil {
				c2.Close()
			}
			return err
		}},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := tt.call(ctx)
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("took %v with a 300ms deadline", elapsed)
			}
			// A write sent just as the connection broke fails at once
			// with ErrUnavailable (outcome unknown); anything else waits
			// for the deadline.
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable) {
				t.Fatalf("got error %v, want context.DeadlineExceeded or ErrUnavailable", err)
			}
		})
	}
	t.Run("no deadline", func(t *testing.T) {
		start := time.Now()
		_, err := c.Brokers(context.Background())
		if elapsed := time.Since(start); elapsed > 3*time.Second {
			t.Errorf("took %v with a 1s request timeout", elapsed)
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("got error %v, want context.DeadlineExceeded or ErrUnavailable", err)
		}
	})

	// Back up: the same client works again.
	p.SetDown(false)
	waitFor(t, 10*time.Second, func() error { _, err := c.Brokers(testCtx(t)); return err })
}

func TestClosedClient(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := c.Brokers(testCtx(t))
	mustIs(t, err, ErrClosed)
	_, err = c.NewCache(testCtx(t))
	if err == nil || !(errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled)) {
		t.Fatalf("NewCache on closed client: %v, want ErrClosed", err)
	}
	_, err = c.RegisterBroker(testCtx(t), meta.Broker{ID: 1}, 2*time.Second)
	mustIs(t, err, ErrClosed)
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
