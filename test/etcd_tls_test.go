package test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/testutil"
)

// etcdTLS is a CA and the truststore holding it, for brokers whose etcd
// traffic is TLS (issue 12).
type etcdTLS struct {
	ca         *testutil.CA
	truststore string
}

func newEtcdTLS(t testing.TB) etcdTLS {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "etcd-ca")
	return etcdTLS{ca: ca, truststore: ca.WriteCert(t, dir, "etcd-ca.pem")}
}

// keystore issues a broker certificate (naming 127.0.0.1) and writes it
// with its key to a keystore file.
func (e etcdTLS) keystore(t testing.TB, cn string) string {
	cert, key := e.ca.Issue(t, pkix.Name{CommonName: cn}, true)
	return testutil.WriteKeystore(t, t.TempDir(), "etcd-keystore.pem", cert, key)
}

// produceConsume creates topic, produces n records with acks=all through
// seeds and consumes them back from the start.
func produceConsume(t *testing.T, seeds []string, topic string, partitions int32, rf int16, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i), Partition: int32(i) % partitions}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", len(seen), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Fatalf("%s consumed twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
}

// A broker whose embedded etcd member has https client and peer URLs
// serves produce and consume; the member refuses etcd clients without a
// certificate of the truststore.
func TestEtcdTLSBroker(t *testing.T) {
	e := newEtcdTLS(t)
	keystore := e.keystore(t, "broker-1")
	etcdURL := fmt.Sprintf("https://127.0.0.1:%d", procFreePort(t))
	b := StartBroker(t, func(cfg *broker.Config) {
		cfg.MetadataClientURL = etcdURL
		cfg.MetadataPeerURL = "https://127.0.0.1:0"
		cfg.MetadataTLSKeystore = keystore
		cfg.MetadataTLSTruststore = e.truststore
	})
	produceConsume(t, []string{b.Addr}, "over-etcd-tls", 2, 1, 50)

	// The key of the split keystore is the owner's only.
	fi, err := os.Stat(filepath.Join(b.Config.DataDir, "etcd", "samsa-tls", "member.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("member key: %v, %v; want mode 0600", fi, err)
	}

	// What the broker presents works; no certificate does not.
	pair, err := tls.LoadX509KeyPair(keystore, keystore)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	good, err := coord.Connect(ctx, []string{etcdURL}, b.Config.ClusterName, coord.WithLogger(testLogger()),
		coord.WithTLS(&tls.Config{RootCAs: e.ca.Pool(), Certificates: []tls.Certificate{pair}}))
	if err != nil {
		t.Fatalf("connect with the broker's certificate: %v", err)
	}
	defer good.Close()
	if _, err := good.ClusterID(ctx); err != nil {
		t.Fatal(err)
	}
	bad, err := coord.Connect(ctx, []string{etcdURL}, b.Config.ClusterName, coord.WithLogger(testLogger()),
		coord.WithDialTimeout(time.Second), coord.WithTLS(&tls.Config{RootCAs: e.ca.Pool()}))
	if err == nil {
		bad.Close()
		t.Fatal("connected without a client certificate")
	}
	if !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("without a client certificate: %v, want ErrUnavailable", err)
	}
}

// https etcd URLs without the TLS settings stop the broker at start.
func TestEtcdTLSConfigError(t *testing.T) {
	cfg := broker.DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.DataDir = t.TempDir()
	cfg.MetadataClientURL, cfg.MetadataPeerURL = "https://127.0.0.1:0", "https://127.0.0.1:0"
	cfg.Logger = testLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := broker.Start(ctx, cfg)
	if err == nil {
		b.Close()
		t.Fatal("started with https etcd URLs and no TLS settings")
	}
	if !errors.Is(err, broker.ErrConfig) || !strings.Contains(err.Error(), "metadata.etcd.ssl.keystore.location") {
		t.Fatalf("got %v, want ErrConfig naming metadata.etcd.ssl.keystore.location", err)
	}
}

// Three brokers, each with an embedded etcd member, the members talking
// over https peer URLs with client certificate authentication: a topic
// replicated on all three takes acks=all writes.
func TestEtcdTLSThreeBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("three brokers")
	}
	e := newEtcdTLS(t)
	const n = 3
	peers := make([]string, n)
	for i := range n {
		peers[i] = fmt.Sprintf("samsa-%d=https://127.0.0.1:%d", i+1, procFreePort(t))
	}
	cfgs := make([]broker.Config, n)
	for i := range n {
		cfg := broker.DefaultConfig()
		cfg.NodeID = int32(i + 1)
		cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
		cfg.DataDir = t.TempDir()
		cfg.MetadataClientURL = "https://127.0.0.1:0"
		_, cfg.MetadataPeerURL, _ = strings.Cut(peers[i], "=")
		cfg.MetadataInitialCluster = strings.Join(peers, ",")
		cfg.MetadataTLSKeystore = e.keystore(t, fmt.Sprintf("broker-%d", i+1))
		cfg.MetadataTLSTruststore = e.truststore
		cfg.SessionTimeout = 9 * time.Second // as StartBroker: Start does not register again
		cfg.Logger = testLogger()
		cfgs[i] = cfg
	}
	// Each broker's member waits for a quorum of the others before its
	// broker can start: all start at once.
	brokers := make([]*broker.Broker, n)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { brokers[i], errs[i] = broker.Start(ctx, cfgs[i]) })
	}
	wg.Wait()
	// All close at once: a broker closed last, its member alone without a
	// quorum, would wait for etcd until its timeouts.
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, b := range brokers {
			if b != nil {
				wg.Go(func() { b.Close() })
			}
		}
		wg.Wait()
	})
	var seeds []string
	for i, b := range brokers {
		if errs[i] != nil {
			t.Fatalf("broker %d: %v", i+1, errs[i])
		}
		seeds = append(seeds, b.Addrs()[0])
	}
	produceConsume(t, seeds, "replicated-over-etcd-tls", 3, 3, 60)
}
