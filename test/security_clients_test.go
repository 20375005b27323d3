//go:build cgo

// Secured listeners (security_test.go) driven by sarama, kafka-go and
// confluent-kafka-go (librdkafka), each configured the way its users
// configure it for Kafka. The whole file needs cgo because of
// confluent-kafka-go.

package test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	confluent "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	kgoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	franzscram "github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/xdg-go/scram"

	"github.com/samsa-io/samsa/internal/broker"
)

// secClientRecords is how many records each round trip produces, over
// secClientPartitions partitions.
const secClientRecords, secClientPartitions = 40, 2

// secClientSubtestTimeout bounds each round trip, so that one that hangs
// leaves the others their time.
const secClientSubtestTimeout = 20 * time.Second

// secEnv is one broker started with securedOpts, shared by the subtests
// of one library's test.
type secEnv struct {
	p       *securePKI
	b       *Broker
	saslSSL string // SCRAM-SHA-256 and SCRAM-SHA-512 over TLS
	mtls    string // TLS with a client certificate required
	plain   string // PLAINTEXT, for the test's own checks
	check   *kadm.Client
}

// secCred is how a client authenticates: SCRAM on the SASL_SSL listener,
// or a client certificate on the MTLS listener.
type secCred struct {
	name      string
	addr      string
	mechanism string // SCRAM-SHA-256 or SCRAM-SHA-512; "" for mTLS
	user      string
	pass      string
	subject   *pkix.Name // the client certificate's subject, for mTLS
}

// startSecEnv starts the broker (groups join at once, one offsets
// partition) and adds the SCRAM-SHA-512 user app/app-secret through the
// admin API over SASL_SSL, authenticated as securedOpts' SCRAM-SHA-256
// admin.
func startSecEnv(t *testing.T, ctx context.Context) *secEnv {
	t.Helper()
	p := newSecurePKI(t)
	b := StartBroker(t, securedOpts(p), func(cfg *broker.Config) {
		for k, v := range map[string]string{
			"group.initial.rebalance.delay.ms": "0",
			"offsets.topic.num.partitions":     "1",
		} {
			if err := cfg.Set(k, v); err != nil {
				panic(err)
			}
		}
	})
	e := &secEnv{p: p, b: b, saslSSL: listenerAddr(t, b, lisSASLSSL), mtls: listenerAddr(t, b, lisMTLS), plain: listenerAddr(t, b, lisPlain)}
	e.check = kadm.NewClient(newKgoClient(t, e.plain))
	admin := kadm.NewClient(secureClient(t, e.saslSSL, kgo.DialTLSConfig(p.clientTLS(t, nil)),
		kgo.SASL(franzscram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism())))
	res, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "app", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "app-secret"}})
	if err != nil {
		t.Fatalf("create the SCRAM-SHA-512 user: %v", err)
	}
	if r, ok := res["app"]; !ok || r.Err != nil {
		t.Fatalf("create the SCRAM-SHA-512 user: %+v", res)
	}
	return e
}

// creds are the three ways in: SCRAM-SHA-256 and SCRAM-SHA-512 over
// SASL_SSL, and a client certificate CN=<cn>,O=clients over MTLS.
func (e *secEnv) creds(cn string) []secCred {
	return []secCred{
		{name: "SASL_SSL-SCRAM-SHA-256", addr: e.saslSSL, mechanism: "SCRAM-SHA-256", user: "admin", pass: "admin-secret"},
		{name: "SASL_SSL-SCRAM-SHA-512", addr: e.saslSSL, mechanism: "SCRAM-SHA-512", user: "app", pass: "app-secret"},
		{name: "MTLS", addr: e.mtls, subject: &pkix.Name{CommonName: cn, Organization: []string{"clients"}}},
	}
}

// tlsConfig is the client's TLS configuration for cred: the test CA, and
// a client certificate for mTLS.
func (e *secEnv) tlsConfig(t *testing.T, cred secCred) *tls.Config {
	return e.p.clientTLS(t, cred.subject)
}

// verify checks, through the PLAINTEXT listener, that the topic holds
// exactly what was produced and that the group committed every record.
func (e *secEnv) verify(t *testing.T, ctx context.Context, topic, group string, want, got []compatRecord) {
	t.Helper()
	checkCompatRecords(t, want, got)
	counts := compatCounts(want)
	checkEndOffsets(t, ctx, e.plain, topic, counts)
	offs, err := e.check.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch the offsets of %s: %v", group, err)
	}
	for p, n := range counts {
		o, ok := offs.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != n {
			t.Errorf("group %s committed %s[%d] at %d (%v, found %v), want %d", group, topic, p, o.At, o.Err, ok, n)
		}
	}
}

// secNames are the topic and group of a library's round trip with cred.
func secNames(lib string, cred secCred) (topic, group string) {
	return "sec-" + lib + "-" + cred.name, "g-sec-" + lib + "-" + cred.name
}

// ---- sarama ----

// xdgSCRAM is a sarama.SCRAMClient on github.com/xdg-go/scram, as
// sarama's documentation and examples have users write it.
type xdgSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *xdgSCRAM) Begin(user, pass, authzID string) error {
	c, err := x.hash.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	x.conv = c.NewConversation()
	return nil
}

func (x *xdgSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *xdgSCRAM) Done() bool                            { return x.conv.Done() }

func (e *secEnv) saramaConfig(t *testing.T, cred secCred) *sarama.Config {
	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = e.tlsConfig(t, cred)
	if cred.mechanism != "" {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Mechanism = sarama.SASLMechanism(cred.mechanism)
		cfg.Net.SASL.User, cfg.Net.SASL.Password = cred.user, cred.pass
		hash := scram.SHA256
		if cred.mechanism == sarama.SASLTypeSCRAMSHA512 {
			hash = scram.SHA512
		}
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &xdgSCRAM{hash: hash} }
	}
	return cfg
}

// saramaSecHandler passes a group member's records on, each after it was
// marked; the offsets are committed (synchronously) before the record at
// the partition's high watermark is passed on. (A commit per record would
// wait behind sarama's long-polling fetch on the same connection.)
type saramaSecHandler struct{ out chan<- compatRecord }

func (saramaSecHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaSecHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaSecHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		s.MarkMessage(m, "")
		if m.Offset+1 >= claim.HighWaterMarkOffset() {
			s.Commit()
		}
		r := compatRecord{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
		for _, h := range m.Headers {
			r.Headers = append(r.Headers, compatHeader{Key: string(h.Key), Value: h.Value})
		}
		select {
		case h.out <- r:
		case <-s.Context().Done():
			return nil
		}
	}
	return nil
}

// sarama creates a topic and lists topics with its ClusterAdmin,
// produces with a SyncProducer and consumes with a ConsumerGroup, over
// SASL_SSL with SCRAM-SHA-256 and SCRAM-SHA-512 (sarama's
// SCRAMClientGeneratorFunc on xdg-go/scram) and over mTLS; a wrong
// password is refused with SASL_AUTHENTICATION_FAILED.
func TestSecurityClientsSarama(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	e := startSecEnv(t, ctx)
	for _, cred := range e.creds("sarama") {
		t.Run(cred.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, secClientSubtestTimeout)
			defer cancel()
			topic, group := secNames("sarama", cred)
			cfg := e.saramaConfig(t, cred)
			addrs := []string{cred.addr}

			adm, err := sarama.NewClusterAdmin(addrs, cfg)
			if err != nil {
				t.Fatalf("cluster admin: %v", err)
			}
			defer adm.Close()
			if err := withinContext(t, ctx, "create topic", func() error {
				return adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: secClientPartitions, ReplicationFactor: 1}, false)
			}); err != nil {
				t.Fatalf("create topic: %v", err)
			}
			var topics map[string]sarama.TopicDetail
			if err := withinContext(t, ctx, "list topics", func() (err error) { topics, err = adm.ListTopics(); return err }); err != nil {
				t.Fatalf("list topics: %v", err)
			}
			if d, ok := topics[topic]; !ok || d.NumPartitions != secClientPartitions {
				t.Fatalf("list topics: %s is %+v (listed %v), want %d partitions", topic, d, ok, secClientPartitions)
			}

			want := makeCompatRecords(secClientRecords, secClientPartitions)
			prod, err := sarama.NewSyncProducer(addrs, cfg)
			if err != nil {
				t.Fatalf("sync producer: %v", err)
			}
			msgs := make([]*sarama.ProducerMessage, len(want))
			for i, w := range want {
				m := &sarama.ProducerMessage{Topic: topic, Partition: w.Partition, Key: sarama.ByteEncoder(w.Key), Value: sarama.ByteEncoder(w.Value)}
				for _, h := range w.Headers {
					m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
				}
				msgs[i] = m
			}
			if err := withinContext(t, ctx, "send messages", func() error { return prod.SendMessages(msgs) }); err != nil {
				prod.Close()
				t.Fatalf("send messages: %v", err)
			}
			if err := prod.Close(); err != nil {
				t.Fatalf("close producer: %v", err)
			}
			for i, m := range msgs {
				if m.Partition != want[i].Partition || m.Offset != want[i].Offset {
					t.Fatalf("message %d acknowledged at %d@%d, want %d@%d", i, m.Partition, m.Offset, want[i].Partition, want[i].Offset)
				}
			}

			cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
			cfg.Consumer.Offsets.AutoCommit.Enable = false
			cg, err := sarama.NewConsumerGroup(addrs, group, cfg)
			if err != nil {
				t.Fatalf("consumer group: %v", err)
			}
			out := make(chan compatRecord, len(want))
			failed := make(chan error, 1)
			fail := func(err error) {
				select {
				case failed <- err:
				default: // the first error is enough
				}
			}
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for cctx.Err() == nil {
					if err := cg.Consume(cctx, []string{topic}, saramaSecHandler{out}); err != nil && cctx.Err() == nil {
						fail(err)
						return
					}
				}
			}()
			go func() {
				for err := range cg.Errors() { // closed by cg.Close
					fail(err)
				}
			}()
			stop := sync.OnceValue(func() error { cancel(); <-done; return cg.Close() })
			defer stop()
			var got []compatRecord
			for len(got) < len(want) {
				select {
				case r := <-out:
					got = append(got, r)
				case err := <-failed:
					t.Fatalf("consumer group, %d of %d records consumed: %v", len(got), len(want), err)
				case <-ctx.Done():
					t.Fatalf("consumer group, %d of %d records consumed: %v", len(got), len(want), ctx.Err())
				}
			}
			if err := stop(); err != nil {
				t.Errorf("close consumer group: %v", err)
			}
			e.verify(t, ctx, topic, group, want, got)
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		cred := e.creds("sarama")[0]
		cred.pass = "wrong"
		cfg := e.saramaConfig(t, cred)
		cfg.Metadata.Retry.Max = 1
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		var cl sarama.Client
		err := withinContext(t, wctx, "new client with a wrong password", func() (err error) {
			cl, err = sarama.NewClient([]string{cred.addr}, cfg)
			return err
		})
		if err == nil {
			cl.Close()
			t.Fatal("a client with a wrong password connected")
		}
		if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
			t.Fatalf("a wrong password: %v, want %v", err, sarama.ErrSASLAuthenticationFailed)
		}
	})
}

// ---- kafka-go ----

func (e *secEnv) kafkaGoSASL(t *testing.T, cred secCred) sasl.Mechanism {
	if cred.mechanism == "" {
		return nil
	}
	algo := kgoscram.SHA256
	if cred.mechanism == "SCRAM-SHA-512" {
		algo = kgoscram.SHA512
	}
	m, err := kgoscram.Mechanism(algo, cred.user, cred.pass)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// kafka-go creates a topic and reads its metadata with a Client, writes
// with a Writer (all three on a Transport with TLS and SASL) and consumes
// with a group Reader (a Dialer with TLS and SASL), over SASL_SSL with
// SCRAM-SHA-256 and SCRAM-SHA-512 (kafka-go's sasl/scram) and over mTLS;
// a wrong password is refused with SASL_AUTHENTICATION_FAILED through
// both the Dialer and the Transport.
func TestSecurityClientsKafkaGo(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	e := startSecEnv(t, ctx)
	for _, cred := range e.creds("kafkago") {
		t.Run(cred.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, secClientSubtestTimeout)
			defer cancel()
			topic, group := secNames("kafkago", cred)
			transport := &kafkago.Transport{TLS: e.tlsConfig(t, cred), SASL: e.kafkaGoSASL(t, cred), DialTimeout: 5 * time.Second}
			defer transport.CloseIdleConnections()
			cl := &kafkago.Client{Addr: kafkago.TCP(cred.addr), Transport: transport, Timeout: 10 * time.Second}

			created, err := cl.CreateTopics(ctx, &kafkago.CreateTopicsRequest{
				Topics: []kafkago.TopicConfig{{Topic: topic, NumPartitions: secClientPartitions, ReplicationFactor: 1}},
			})
			if err != nil {
				t.Fatalf("create topic: %v", err)
			}
			if err := created.Errors[topic]; err != nil {
				t.Fatalf("create topic: %v", err)
			}
			md, err := cl.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
			if err != nil {
				t.Fatalf("metadata: %v", err)
			}
			if len(md.Topics) != 1 || md.Topics[0].Name != topic || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != secClientPartitions {
				t.Fatalf("metadata of %s: %+v, want %d partitions", topic, md.Topics, secClientPartitions)
			}
			if len(md.Brokers) != 1 || int32(md.Brokers[0].Port) != portOf(t, cred.addr) {
				t.Fatalf("metadata lists brokers %+v, want the one at %s", md.Brokers, cred.addr)
			}

			want := makeCompatRecords(secClientRecords, secClientPartitions)
			w := &kafkago.Writer{
				Addr:         kafkago.TCP(cred.addr),
				Topic:        topic,
				Transport:    transport,
				RequiredAcks: kafkago.RequireAll,
				Balancer: kafkago.BalancerFunc(func(m kafkago.Message, ps ...int) int {
					return compatPartitionOfKey(m.Key, len(ps))
				}),
				BatchSize:    len(want),
				BatchTimeout: 10 * time.Millisecond,
			}
			msgs := make([]kafkago.Message, len(want))
			for i, r := range want {
				m := kafkago.Message{Key: r.Key, Value: r.Value}
				for _, h := range r.Headers {
					m.Headers = append(m.Headers, kafkago.Header{Key: h.Key, Value: h.Value})
				}
				msgs[i] = m
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				w.Close()
				t.Fatalf("write messages: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("close writer: %v", err)
			}

			r := kafkago.NewReader(kafkago.ReaderConfig{
				Brokers:     []string{cred.addr},
				GroupID:     group,
				Topic:       topic,
				StartOffset: kafkago.FirstOffset,
				MaxWait:     200 * time.Millisecond,
				Dialer:      &kafkago.Dialer{Timeout: 5 * time.Second, TLS: e.tlsConfig(t, cred), SASLMechanism: e.kafkaGoSASL(t, cred)},
			})
			defer r.Close()
			var got []compatRecord
			for len(got) < len(want) {
				m, err := r.ReadMessage(ctx) // commits synchronously
				if err != nil {
					t.Fatalf("group reader, %d of %d records consumed: %v", len(got), len(want), err)
				}
				g := compatRecord{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value}
				for _, h := range m.Headers {
					g.Headers = append(g.Headers, compatHeader{Key: h.Key, Value: h.Value})
				}
				got = append(got, g)
			}
			if err := r.Close(); err != nil {
				t.Errorf("close reader: %v", err)
			}
			e.verify(t, ctx, topic, group, want, got)
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		cred := e.creds("kafkago")[0]
		cred.pass = "wrong"
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		d := &kafkago.Dialer{Timeout: 5 * time.Second, TLS: e.tlsConfig(t, cred), SASLMechanism: e.kafkaGoSASL(t, cred)}
		conn, err := d.DialContext(wctx, "tcp", cred.addr)
		if err == nil {
			conn.Close()
			t.Fatal("Dialer: a wrong password connected")
		}
		if !errors.Is(err, kafkago.SASLAuthenticationFailed) {
			t.Fatalf("Dialer: a wrong password: %v, want %v", err, kafkago.SASLAuthenticationFailed)
		}
		transport := &kafkago.Transport{TLS: e.tlsConfig(t, cred), SASL: e.kafkaGoSASL(t, cred), DialTimeout: 5 * time.Second}
		defer transport.CloseIdleConnections()
		cl := &kafkago.Client{Addr: kafkago.TCP(cred.addr), Transport: transport}
		if _, err := cl.Metadata(wctx, &kafkago.MetadataRequest{}); !errors.Is(err, kafkago.SASLAuthenticationFailed) {
			t.Fatalf("Transport: a wrong password: %v, want %v", err, kafkago.SASLAuthenticationFailed)
		}
	})
}

// ---- confluent-kafka-go (librdkafka) ----

// confluentConfig is librdkafka's security configuration for cred: PEM
// files in a temporary directory, as librdkafka reads them.
func (e *secEnv) confluentConfig(t *testing.T, cred secCred) confluent.ConfigMap {
	dir := t.TempDir()
	cfg := confluent.ConfigMap{
		"bootstrap.servers": cred.addr,
		"ssl.ca.location":   e.p.ca.WriteCert(t, dir, "ca.pem"),
		"log_level":         4,
	}
	if cred.mechanism != "" {
		cfg["security.protocol"] = "SASL_SSL"
		cfg["sasl.mechanisms"] = cred.mechanism
		cfg["sasl.username"] = cred.user
		cfg["sasl.password"] = cred.pass
	} else {
		cert, key := e.p.ca.Issue(t, *cred.subject, false)
		certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
		if err := os.WriteFile(certFile, cert, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg["security.protocol"] = "SSL"
		cfg["ssl.certificate.location"] = certFile
		cfg["ssl.key.location"] = keyFile
	}
	return cfg
}

func withConfig(base confluent.ConfigMap, extra confluent.ConfigMap) *confluent.ConfigMap {
	cfg := confluent.ConfigMap{}
	for k, v := range base {
		cfg[k] = v
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return &cfg
}

// confluent-kafka-go creates a topic and reads its metadata with an
// AdminClient, produces with a Producer (delivery reports checked) and
// consumes with a subscribed Consumer in a group, over SASL_SSL with
// SCRAM-SHA-256 and SCRAM-SHA-512 and over SSL with a client certificate
// (PEM files); a wrong password makes librdkafka report an authentication
// error.
func TestSecurityClientsConfluent(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	e := startSecEnv(t, ctx)
	for _, cred := range e.creds("confluent") {
		t.Run(cred.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, secClientSubtestTimeout)
			defer cancel()
			topic, group := secNames("confluent", cred)
			base := e.confluentConfig(t, cred)

			adm, err := confluent.NewAdminClient(withConfig(base, nil))
			if err != nil {
				t.Fatalf("admin client: %v", err)
			}
			defer adm.Close()
			res, err := adm.CreateTopics(ctx, []confluent.TopicSpecification{{Topic: topic, NumPartitions: secClientPartitions, ReplicationFactor: 1}},
				confluent.SetAdminOperationTimeout(10*time.Second))
			if err != nil {
				t.Fatalf("create topic: %v", err)
			}
			if len(res) != 1 || res[0].Topic != topic || res[0].Error.Code() != confluent.ErrNoError {
				t.Fatalf("create topic: %v", res)
			}
			md, err := adm.GetMetadata(&topic, false, 10000)
			if err != nil {
				t.Fatalf("metadata: %v", err)
			}
			if tm, ok := md.Topics[topic]; !ok || tm.Error.Code() != confluent.ErrNoError || len(tm.Partitions) != secClientPartitions {
				t.Fatalf("metadata of %s: %+v, want %d partitions", topic, tm, secClientPartitions)
			}

			want := makeCompatRecords(secClientRecords, secClientPartitions)
			confluentProduce(t, ctx, cred.addr, topic, want, base)

			c, err := confluent.NewConsumer(withConfig(base, confluent.ConfigMap{
				"group.id":             group,
				"auto.offset.reset":    "earliest",
				"enable.auto.commit":   false,
				"enable.partition.eof": false,
				"fetch.wait.max.ms":    200,
			}))
			if err != nil {
				t.Fatalf("new consumer: %v", err)
			}
			defer c.Close()
			if err := c.Subscribe(topic, nil); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			var got []compatRecord
			for len(got) < len(want) {
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumer, %d of %d records consumed: %v", len(got), len(want), err)
				}
				m, err := c.ReadMessage(100 * time.Millisecond)
				if err != nil {
					var kerr confluent.Error
					if errors.As(err, &kerr) && kerr.Code() == confluent.ErrTimedOut {
						continue
					}
					t.Fatalf("consumer, %d of %d records consumed: %v", len(got), len(want), err)
				}
				g := compatRecord{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset), Key: m.Key, Value: m.Value}
				for _, h := range m.Headers {
					g.Headers = append(g.Headers, compatHeader{Key: h.Key, Value: h.Value})
				}
				got = append(got, g)
			}
			if _, err := c.Commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("close consumer: %v", err)
			}
			e.verify(t, ctx, topic, group, want, got)
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		cred := e.creds("confluent")[0]
		cred.pass = "wrong"
		p, err := confluent.NewProducer(withConfig(e.confluentConfig(t, cred), nil))
		if err != nil {
			t.Fatalf("new producer: %v", err)
		}
		defer p.Close()
		// librdkafka reports errors as events; the authentication error
		// may follow others (the connection it closes, say).
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		var others []string
		for {
			select {
			case ev := <-p.Events():
				kerr, ok := ev.(confluent.Error)
				if !ok {
					continue
				}
				if kerr.Code() == confluent.ErrAuthentication {
					t.Logf("librdkafka: %v (after %v)", kerr, others)
					return
				}
				others = append(others, fmt.Sprintf("%v (%v)", kerr, kerr.Code()))
			case <-wctx.Done():
				t.Fatalf("a wrong password: no authentication error within 15 s, only %v", others)
			}
		}
	})
}
