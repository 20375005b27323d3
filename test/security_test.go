package test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/protocol"
	"github.com/samsa-io/samsa/internal/testutil"
)

// securePKI is the certificates of a secured test broker: a CA, the
// broker's keystore and truststore files, and client certificates.
type securePKI struct {
	ca         *testutil.CA
	dir        string
	keystore   string // the broker's key and chain (PEM), CN=broker
	truststore string // the CA (PEM)
}

func newSecurePKI(t testing.TB) *securePKI {
	t.Helper()
	p := &securePKI{ca: testutil.NewCA(t, "samsa test CA"), dir: t.TempDir()}
	cert, key := p.ca.Issue(t, pkix.Name{CommonName: "broker", Organization: []string{"samsa"}}, true)
	p.keystore = testutil.WriteKeystore(t, p.dir, "broker.pem", cert, key)
	p.truststore = p.ca.WriteCert(t, p.dir, "ca.pem")
	return p
}

// clientTLS is a client's TLS config trusting the CA; with a subject, it
// also presents a client certificate for it.
func (p *securePKI) clientTLS(t testing.TB, subject *pkix.Name) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.ca.Pool(), MinVersion: tls.VersionTLS12}
	if subject != nil {
		cert, key := p.ca.Issue(t, *subject, false)
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// Listener names of the secured broker.
const (
	lisPlain     = "PLAINTEXT"      // inter-broker, no security
	lisSASLSSL   = "SASL_SSL"       // SCRAM over TLS
	lisMTLS      = "MTLS"           // SSL with client certificates required
	lisSASLPlain = "SASL_PLAINTEXT" // PLAIN, no TLS
)

// securedOpts configures a broker with one listener of each kind and an
// admin SCRAM user.
func securedOpts(p *securePKI) func(*broker.Config) {
	return func(cfg *broker.Config) {
		cfg.Listeners = []string{
			lisPlain + "://127.0.0.1:0", lisSASLSSL + "://127.0.0.1:0",
			lisMTLS + "://127.0.0.1:0", lisSASLPlain + "://127.0.0.1:0",
		}
		set := func(k, v string) {
			if err := cfg.Set(k, v); err != nil {
				panic(err)
			}
		}
		set("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT")
		set("ssl.keystore.type", "PEM")
		set("ssl.keystore.location", p.keystore)
		set("ssl.truststore.type", "PEM")
		set("ssl.truststore.location", p.truststore)
		set("listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512")
		set("listener.name.mtls.ssl.client.auth", "required")
		set("listener.name.mtls.ssl.principal.mapping.rules", "RULE:^CN=([a-z]+),O=clients$/$1/,RULE:^CN=([a-z]+),O=admins$/$1-admin/")
		set("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN")
		set("listener.name.sasl_plaintext.plain.sasl.jaas.config",
			`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_dave="dave-secret";`)
		set("connection.failed.authentication.delay.ms", "20")
		cfg.InitialScram = []broker.InitialScram{{Mechanism: "SCRAM-SHA-256", User: "admin", Password: "admin-secret", Iterations: 4096}}
	}
}

// listenerAddr returns the bound address of the broker's listener name,
// given the order of securedOpts.
func listenerAddr(t testing.TB, b *Broker, name string) string {
	t.Helper()
	order := []string{lisPlain, lisSASLSSL, lisMTLS, lisSASLPlain}
	for i, n := range order {
		if n == name {
			return b.Addrs()[i]
		}
	}
	t.Fatalf("no listener %s", name)
	return ""
}

func secureClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(5 * time.Second),
		kgo.DialTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// roundTrip produces n records to topic and reads them back with a
// consumer group, all through client options opts on addr.
func roundTrip(ctx context.Context, t testing.TB, addr, topic, group string, n int, opts ...kgo.Opt) {
	t.Helper()
	p := secureClient(t, addr, append([]kgo.Opt{kgo.DefaultProduceTopic(topic)}, opts...)...)
	for i := range n {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", topic, i)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s through %s: %v", topic, addr, err)
		}
	}
	c := secureClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	seen := 0
	for seen < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s through %s: %d of %d records: %v", topic, addr, seen, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("%s-%d", topic, seen); string(r.Value) != want {
				t.Fatalf("record %d is %q, want %q", seen, r.Value, want)
			}
			seen++
		})
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit through %s: %v", addr, err)
	}
}

// metadataPort returns the port Metadata gives for the broker through a
// client.
func metadataPort(ctx context.Context, t testing.TB, cl *kgo.Client) int32 {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	if len(resp.Brokers) != 1 {
		t.Fatalf("metadata lists %d brokers, want 1", len(resp.Brokers))
	}
	return resp.Brokers[0].Port
}

func portOf(t testing.TB, addr string) int32 {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

// One broker with a listener of each security protocol: franz-go
// produces, consumes with a group and runs admin requests over SASL_SSL
// with SCRAM (SHA-256 and SHA-512), over mTLS and over SASL_PLAINTEXT
// with PLAIN; each listener's clients are told that listener's address;
// wrong passwords, unknown users, missing or foreign client certificates
// and a subject no mapping rule accepts are refused; SCRAM credentials
// created, listed and deleted with the admin API take effect at the next
// login.
func TestSecurityListeners(t *testing.T) {
	p := newSecurePKI(t)
	b := StartBroker(t, securedOpts(p))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	saslSSL := listenerAddr(t, b, lisSASLSSL)
	mtls := listenerAddr(t, b, lisMTLS)
	saslPlain := listenerAddr(t, b, lisSASLPlain)
	scram256 := func(user, pass string) kgo.Opt {
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
	}
	scram512 := func(user, pass string) kgo.Opt {
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
	}
	tlsOpt := func(subject *pkix.Name) kgo.Opt { return kgo.DialTLSConfig(p.clientTLS(t, subject)) }

	admin := secureClient(t, saslSSL, tlsOpt(nil), scram256("admin", "admin-secret"))
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"sec-scram", "sec-mtls", "sec-plain"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatalf("create %s over SASL_SSL: %v", topic, err)
		}
	}

	t.Run("each listener advertises its own address", func(t *testing.T) {
		for _, c := range []struct {
			addr string
			cl   *kgo.Client
		}{
			{saslSSL, admin},
			{listenerAddr(t, b, lisPlain), secureClient(t, listenerAddr(t, b, lisPlain))},
			{mtls, secureClient(t, mtls, tlsOpt(&pkix.Name{CommonName: "carol", Organization: []string{"clients"}}))},
			{saslPlain, secureClient(t, saslPlain, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))},
		} {
			if got, want := metadataPort(ctx, t, c.cl), portOf(t, c.addr); got != want {
				t.Errorf("a client of %s is told port %d, want %d", c.addr, got, want)
			}
		}
	})

	t.Run("DescribeConfigs shows the security settings, secrets hidden", func(t *testing.T) {
		rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("1", nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]kadm.Config{}
		for _, c := range rc.Configs {
			got[c.Key] = c
		}
		if c := got["listener.security.protocol.map"]; c.MaybeValue() != "MTLS:SSL,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL" {
			t.Errorf("listener.security.protocol.map = %q", c.MaybeValue())
		}
		if c := got["listener.name.sasl_ssl.sasl.enabled.mechanisms"]; c.MaybeValue() != "SCRAM-SHA-256,SCRAM-SHA-512" {
			t.Errorf("listener.name.sasl_ssl.sasl.enabled.mechanisms = %q", c.MaybeValue())
		}
		jaas, ok := got["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
		if !ok || jaas.Value != nil || !jaas.Sensitive {
			t.Errorf("the PLAIN JAAS config is shown as %+v (present %v), want sensitive without a value", jaas, ok)
		}
	})

	t.Run("SCRAM over TLS", func(t *testing.T) {
		roundTrip(ctx, t, saslSSL, "sec-scram", "g-scram", 50, tlsOpt(nil), scram256("admin", "admin-secret"))
	})
	t.Run("mTLS", func(t *testing.T) {
		roundTrip(ctx, t, mtls, "sec-mtls", "g-mtls", 50, tlsOpt(&pkix.Name{CommonName: "carol", Organization: []string{"clients"}}))
	})
	t.Run("PLAIN", func(t *testing.T) {
		roundTrip(ctx, t, saslPlain, "sec-plain", "g-plain", 50, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	})

	refused := func(t *testing.T, what, addr string, want error, opts ...kgo.Opt) {
		t.Helper()
		cl := secureClient(t, addr, append([]kgo.Opt{kgo.RetryTimeout(0)}, opts...)...)
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(cctx, cl)
		if err == nil {
			t.Fatalf("%s: Metadata answered", what)
		}
		if want != nil && !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	}
	t.Run("bad credentials are refused", func(t *testing.T) {
		refused(t, "wrong SCRAM password", saslSSL, kerr.SaslAuthenticationFailed, tlsOpt(nil), scram256("admin", "wrong"))
		refused(t, "unknown SCRAM user", saslSSL, kerr.SaslAuthenticationFailed, tlsOpt(nil), scram256("nobody", "admin-secret"))
		refused(t, "SCRAM-SHA-512 without a SHA-512 credential", saslSSL, kerr.SaslAuthenticationFailed, tlsOpt(nil), scram512("admin", "admin-secret"))
		refused(t, "wrong PLAIN password", saslPlain, kerr.SaslAuthenticationFailed, kgo.SASL(plain.Auth{User: "alice", Pass: "alice"}.AsMechanism()))
		refused(t, "PLAIN on the SCRAM listener", saslSSL, kerr.UnsupportedSaslMechanism, tlsOpt(nil), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		refused(t, "no SASL on a SASL listener", saslPlain, nil)
		refused(t, "no client certificate", mtls, nil, tlsOpt(nil))
		refused(t, "a subject no rule maps", mtls, nil, tlsOpt(&pkix.Name{CommonName: "eve", Organization: []string{"strangers"}}))
		other := newSecurePKI(t)
		foreign := p.clientTLS(t, nil)
		cert, key := other.ca.Issue(t, pkix.Name{CommonName: "carol", Organization: []string{"clients"}}, false)
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		foreign.Certificates = []tls.Certificate{pair}
		refused(t, "a certificate of another CA", mtls, nil, kgo.DialTLSConfig(foreign))
		refused(t, "plaintext to a TLS listener", saslSSL, nil, scram256("admin", "admin-secret"))
	})

	t.Run("SCRAM credentials through the admin API", func(t *testing.T) {
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
		if err != nil {
			t.Fatal(err)
		}
		if b, ok := res["bob"]; !ok || b.Err != nil {
			t.Fatalf("upsert bob: %+v", res)
		}
		bob := secureClient(t, saslSSL, tlsOpt(nil), scram512("bob", "bob-secret"))
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, bob); err != nil {
			t.Fatalf("bob's first login: %v", err)
		}
		described, err := adm.DescribeUserSCRAMs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, d := range described {
			for _, ci := range d.CredInfos {
				got[d.User] += fmt.Sprintf("%s/%d ", ci.Mechanism, ci.Iterations)
			}
		}
		if got["admin"] != "SCRAM-SHA-256/4096 " || got["bob"] != "SCRAM-SHA-512/8192 " || len(got) != 2 {
			t.Fatalf("described credentials %v", got)
		}
		one, err := adm.DescribeUserSCRAMs(ctx, "nobody")
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(one["nobody"].Err, kerr.ResourceNotFound) {
			t.Fatalf("describing an unknown user: %v, want RESOURCE_NOT_FOUND", one["nobody"].Err)
		}
		bad, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "weak", Mechanism: kadm.ScramSha256, Iterations: 1000,
			Salt: []byte("s"), SaltedPassword: []byte("short")}})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(bad["weak"].Err, kerr.UnacceptableCredential) {
			t.Fatalf("1000 iterations: %v, want UNACCEPTABLE_CREDENTIAL", bad["weak"].Err)
		}
		del, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil)
		if err != nil || del["bob"].Err != nil {
			t.Fatalf("delete bob: %v %v", err, del["bob"].Err)
		}
		refused(t, "a deleted credential", saslSSL, kerr.SaslAuthenticationFailed, tlsOpt(nil), scram512("bob", "bob-secret"))
		again, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil)
		if err != nil || !errors.Is(again["bob"].Err, kerr.ResourceNotFound) {
			t.Fatalf("deleting again: %v %v, want RESOURCE_NOT_FOUND", err, again["bob"].Err)
		}
	})
}

// Before a client has authenticated on a SASL listener it may send only
// ApiVersions and the SASL requests, in frames of at most
// sasl.server.max.receive.size: anything else, or a larger frame, closes
// the connection; a client that never finishes its TLS handshake is
// closed too; and the broker keeps serving others meanwhile.
func TestSecurityBeforeAuthentication(t *testing.T) {
	p := newSecurePKI(t)
	b := StartBroker(t, securedOpts(p))
	saslPlain := listenerAddr(t, b, lisSASLPlain)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	dial := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", saslPlain, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(20 * time.Second))
		return c
	}
	send := func(c net.Conn, req kmsg.Request) {
		t.Helper()
		if _, err := c.Write(protocol.AppendRequest(nil, req, 1, nil)); err != nil {
			t.Fatal(err)
		}
	}
	expectClosed := func(c net.Conn, what string) {
		t.Helper()
		buf := make([]byte, 1024)
		for {
			if _, err := c.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("%s: the connection stayed open", what)
				}
				return
			}
		}
	}

	// ApiVersions is answered before authentication.
	c := dial()
	if _, err := rawCall(c, kmsg.NewPtrApiVersionsRequest(), 1); err != nil {
		t.Fatalf("ApiVersions before authentication: %v", err)
	}
	// Metadata is not.
	send(c, kmsg.NewPtrMetadataRequest())
	expectClosed(c, "Metadata before authentication")

	// A large frame is refused from its size prefix.
	c = dial()
	if _, err := c.Write([]byte{0x06, 0x40, 0x00, 0x00}); err != nil { // 100 MiB
		t.Fatal(err)
	}
	expectClosed(c, "a 100 MiB frame before authentication")

	// A SaslAuthenticate before any handshake.
	c = dial()
	send(c, &kmsg.SASLAuthenticateRequest{Version: 1, SASLAuthBytes: []byte("\x00alice\x00alice-secret")})
	expectClosed(c, "SaslAuthenticate without a handshake")

	// A TLS client that never finishes its handshake holds a connection
	// until the handshake timeout at most; others are served meanwhile.
	stalled, err := net.Dial("tcp", listenerAddr(t, b, lisSASLSSL))
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	roundTrip(ctx, t, saslPlain, "pre-auth", "g-pre", 5, kgo.AllowAutoTopicCreation(), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	stalled.SetReadDeadline(time.Now().Add(protocol.TLSHandshakeTimeout + 10*time.Second))
	buf := make([]byte, 16)
	if _, err := stalled.Read(buf); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("a stalled TLS handshake: read %v, want the broker to close it", err)
	}
}

// The SaslHandshake v0 form (tokens as bare frames, as old clients send
// them) authenticates with PLAIN too.
func TestSecuritySASLv0(t *testing.T) {
	p := newSecurePKI(t)
	b := StartBroker(t, securedOpts(p))
	c, err := net.DialTimeout("tcp", listenerAddr(t, b, lisSASLPlain), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	hs := &kmsg.SASLHandshakeRequest{Version: 0, Mechanism: "PLAIN"}
	resp, err := rawCall(c, hs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		t.Fatalf("handshake v0: %v", kerr.ErrorForCode(code))
	}
	token := []byte("\x00alice\x00alice-secret")
	frame := append([]byte{0, 0, 0, byte(len(token))}, token...)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading the v0 reply: %v", err)
	}
	if size != [4]byte{} {
		t.Fatalf("PLAIN's v0 reply is %v bytes, want an empty frame", size)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	if _, err := rawCall(c, md, 2); err != nil {
		t.Fatalf("Metadata after a v0 login: %v", err)
	}
}

// rawCall sends req on c and reads and decodes its response.
func rawCall(c net.Conn, req kmsg.Request, correlationID int32) (kmsg.Response, error) {
	if _, err := c.Write(protocol.AppendRequest(nil, req, correlationID, nil)); err != nil {
		return nil, err
	}
	frame, err := protocol.ReadResponse(c, 1<<20)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	got, err := protocol.DecodeResponse(frame, resp)
	if err != nil {
		return nil, err
	}
	if got != correlationID {
		return nil, fmt.Errorf("correlation id %d, want %d", got, correlationID)
	}
	return resp, nil
}

// Three brokers whose only listener is SASL_SSL: they replicate to each
// other over it, authenticated with SCRAM-SHA-512 as the user their JAAS
// config names, so an RF 3 topic's followers join the ISR and acks=all
// records are committed; a client without credentials gets nothing.
func TestSecurityInterBroker(t *testing.T) {
	p := newSecurePKI(t)
	c := startInProcessCluster(t, 3, func(cfg *broker.Config) {
		cfg.Listeners = []string{"SASL_SSL://127.0.0.1:0"}
		set := func(k, v string) {
			if err := cfg.Set(k, v); err != nil {
				panic(err)
			}
		}
		set("inter.broker.listener.name", "SASL_SSL")
		set("ssl.keystore.location", p.keystore)
		set("ssl.truststore.location", p.truststore)
		set("sasl.enabled.mechanisms", "SCRAM-SHA-512")
		set("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512")
		set("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
			`org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`)
		cfg.InitialScram = []broker.InitialScram{
			{Mechanism: "SCRAM-SHA-512", User: "broker", Password: "broker-secret", Iterations: 4096},
			{Mechanism: "SCRAM-SHA-512", User: "app", Password: "app-secret", Iterations: 4096},
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(c.bootstrap()...), kgo.DialTLSConfig(p.clientTLS(t, nil)),
		kgo.SASL(scram.Auth{User: "app", Pass: "app-secret"}.AsSha512Mechanism()), kgo.DefaultProduceTopic("sec-rf3"),
		// Not idempotent, so that a broken cluster fails the produce at
		// the delivery timeout rather than keep its sequence waiting.
		kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30 * time.Second)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "sec-rf3"); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, "sec-rf3")
		if err != nil {
			return err
		}
		for _, pd := range md.Topics["sec-rf3"].Partitions {
			if len(pd.ISR) != 3 {
				return fmt.Errorf("partition %d ISR %v", pd.Partition, pd.ISR)
			}
		}
		return nil
	})
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
	}
	// Every follower caught up through its authenticated fetches.
	WaitFor(t, 30*time.Second, func() error {
		offs, err := adm.ListEndOffsets(ctx, "sec-rf3")
		if err != nil {
			return err
		}
		var total int64
		offs.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if total != 100 {
			return fmt.Errorf("high watermarks sum to %d, want 100", total)
		}
		return nil
	})
	for _, addr := range c.bootstrap() {
		anon := secureClient(t, addr, kgo.DialTLSConfig(p.clientTLS(t, nil)), kgo.RetryTimeout(0))
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(actx, anon); err == nil {
			acancel()
			t.Fatalf("%s answered a client that did not authenticate", addr)
		}
		acancel()
	}
}

// Followers whose inter-broker listener limits SASL sessions
// (connections.max.reauth.ms) dial again before their session runs out:
// across several lifetimes no replica fetch fails (a fetch after the
// lifetime would have its connection closed, a warning and a backoff),
// and acks=all produces keep being committed.
func TestSecurityInterBrokerReauthentication(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	var failures atomic.Int64
	c := startInProcessCluster(t, 2, func(cfg *broker.Config) {
		cfg.Listeners = []string{"SASL_PLAINTEXT://127.0.0.1:0"}
		for k, v := range map[string]string{
			"inter.broker.listener.name":           "SASL_PLAINTEXT",
			"sasl.enabled.mechanisms":              "PLAIN",
			"sasl.mechanism.inter.broker.protocol": "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="broker" password="broker-secret" user_broker="broker-secret" user_app="app-secret";`,
			"listener.name.sasl_plaintext.connections.max.reauth.ms": strconv.Itoa(int(lifetime.Milliseconds())),
		} {
			if err := cfg.Set(k, v); err != nil {
				panic(err)
			}
		}
		cfg.Logger = slog.New(messageCounter{next: cfg.Logger.Handler(), message: "replica fetches from the leader fail", n: &failures})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap()...), kgo.SASL(plain.Auth{User: "app", Pass: "app-secret"}.AsMechanism()),
		kgo.DefaultProduceTopic("reauth-rf2"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 2, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "reauth-rf2"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for start := time.Now(); time.Since(start) < 4*lifetime; n++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", n)}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d after %v: %v", n, time.Since(start), err)
		}
	}
	if f := failures.Load(); f != 0 {
		t.Fatalf("%d replica fetch failures reported over four session lifetimes: the followers' sessions ran out", f)
	}
	t.Logf("%d acks=all records over four session lifetimes", n)
}

// messageCounter counts the log records of level Warn and above with
// message and passes every record on to next.
type messageCounter struct {
	next    slog.Handler
	message string
	n       *atomic.Int64
}

func (h messageCounter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h messageCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && r.Message == h.message {
		h.n.Add(1)
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h messageCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return messageCounter{h.next.WithAttrs(as), h.message, h.n}
}

func (h messageCounter) WithGroup(name string) slog.Handler {
	return messageCounter{h.next.WithGroup(name), h.message, h.n}
}

// KIP-368 re-authentication: with connections.max.reauth.ms the broker
// tells a client its session lifetime; the client may authenticate again
// on the same connection (as the same principal only), and a connection
// whose session ran out is closed at its next request. franz-go, which
// re-authenticates by itself, keeps producing across several lifetimes.
func TestSecurityReauthentication(t *testing.T) {
	const lifetime = 1500 * time.Millisecond
	p := newSecurePKI(t)
	b := StartBroker(t, securedOpts(p), func(cfg *broker.Config) {
		if err := cfg.Set("listener.name.sasl_plaintext.connections.max.reauth.ms", strconv.Itoa(int(lifetime.Milliseconds()))); err != nil {
			t.Fatal(err)
		}
	})
	addr := listenerAddr(t, b, lisSASLPlain)
	dial := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(30 * time.Second))
		return c
	}
	corr := int32(0)
	login := func(c net.Conn, user, pass string) (*kmsg.SASLAuthenticateResponse, error) {
		t.Helper()
		corr++
		hs, err := rawCall(c, &kmsg.SASLHandshakeRequest{Version: 1, Mechanism: "PLAIN"}, corr)
		if err != nil {
			return nil, err
		}
		if code := hs.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
			return nil, kerr.ErrorForCode(code)
		}
		corr++
		resp, err := rawCall(c, &kmsg.SASLAuthenticateRequest{Version: 2, SASLAuthBytes: []byte("\x00" + user + "\x00" + pass)}, corr)
		if err != nil {
			return nil, err
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			return r, kerr.ErrorForCode(r.ErrorCode)
		}
		return r, nil
	}
	metadata := func(c net.Conn) error {
		corr++
		_, err := rawCall(c, &kmsg.MetadataRequest{Version: 4}, corr)
		return err
	}

	c := dial()
	r, err := login(c, "alice", "alice-secret")
	if err != nil {
		t.Fatal(err)
	}
	if r.SessionLifetimeMillis != lifetime.Milliseconds() {
		t.Fatalf("session lifetime %d ms, want %d", r.SessionLifetimeMillis, lifetime.Milliseconds())
	}
	if err := metadata(c); err != nil {
		t.Fatalf("Metadata after login: %v", err)
	}
	// Again as alice, on the same connection: a new lifetime.
	if _, err := login(c, "alice", "alice-secret"); err != nil {
		t.Fatalf("re-authentication: %v", err)
	}
	if err := metadata(c); err != nil {
		t.Fatalf("Metadata after re-authentication: %v", err)
	}
	// As another user: refused, and the connection closes.
	if _, err := login(c, "dave", "dave-secret"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("re-authentication as another principal: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := metadata(c); err == nil {
		t.Fatal("the connection stayed open after a re-authentication as another principal")
	}

	// A session that ran out: the next request closes the connection.
	c = dial()
	if _, err := login(c, "alice", "alice-secret"); err != nil {
		t.Fatal(err)
	}
	expired := time.Now().Add(lifetime)
	time.Sleep(time.Until(expired) + 100*time.Millisecond) // the broker's clock decides; this waits past it
	if err := metadata(c); err == nil {
		t.Fatal("a request after the session lifetime was answered")
	}

	// franz-go re-authenticates by itself and keeps working past several
	// lifetimes on its connections.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var connects atomic.Int64
	cl := secureClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("reauth"),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.WithHooks(connectCounter{&connects}))
	for start := time.Now(); time.Since(start) < 3*lifetime; {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce after %v: %v", time.Since(start), err)
		}
	}
	if n := connects.Load(); n > 3 {
		t.Errorf("franz-go connected %d times in three session lifetimes: its sessions were closed rather than renewed", n)
	}
}

// connectCounter counts franz-go's successful connections.
type connectCounter struct{ n *atomic.Int64 }

func (c connectCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// A renewed certificate applies to new connections without a restart: the
// keystore file is replaced by one from another CA, and a client that
// trusts only the new CA connects once the broker has looked at the file
// again (at most a second later); clients of the old one no longer can.
// Meanwhile a stream of wrong passwords costs the guesser, not others.
func TestSecurityCertificateReloadAndGuessing(t *testing.T) {
	p := newSecurePKI(t)
	b := StartBroker(t, securedOpts(p))
	mtls := listenerAddr(t, b, lisMTLS)
	saslPlain := listenerAddr(t, b, lisSASLPlain)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Wrong passwords in a loop on one goroutine, good clients beside.
	guessing, stopGuessing := context.WithCancel(ctx)
	guesses := make(chan int, 1)
	go func() {
		n := 0
		defer func() { guesses <- n }()
		for guessing.Err() == nil {
			cl, err := kgo.NewClient(kgo.SeedBrokers(saslPlain), kgo.RetryTimeout(0),
				kgo.SASL(plain.Auth{User: "alice", Pass: fmt.Sprintf("guess-%d", n)}.AsMechanism()))
			if err != nil {
				return
			}
			gctx, gcancel := context.WithTimeout(guessing, 5*time.Second)
			_, err = kmsg.NewPtrMetadataRequest().RequestWith(gctx, cl)
			gcancel()
			cl.Close()
			if err == nil {
				t.Errorf("guess %d logged in", n)
				return
			}
			n++
		}
	}()
	roundTrip(ctx, t, saslPlain, "guessed", "g-guessed", 20, kgo.AllowAutoTopicCreation(),
		kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))

	carol := &pkix.Name{CommonName: "carol", Organization: []string{"clients"}}
	handshake := func(cfg *tls.Config) error {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", mtls, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		// TLS 1.3 reports a refused client certificate at the first read.
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := rawCall(c, kmsg.NewPtrApiVersionsRequest(), 1); err != nil {
			return err
		}
		return nil
	}
	if err := handshake(p.clientTLS(t, carol)); err != nil {
		t.Fatalf("before the renewal: %v", err)
	}

	// The renewal: a certificate of a new CA, trusted by new clients;
	// the broker's truststore gets the new CA too.
	renewed := newSecurePKI(t)
	cert, key := renewed.ca.Issue(t, pkix.Name{CommonName: "broker", Organization: []string{"samsa"}}, true)
	replace := func(path string, data []byte) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	replace(p.keystore, append(append([]byte{}, key...), cert...))
	replace(p.truststore, renewed.ca.CertPEM())
	WaitFor(t, 10*time.Second, func() error { return handshake(renewed.clientTLS(t, carol)) })
	if err := handshake(p.clientTLS(t, carol)); err == nil {
		t.Fatal("a client of the old CA still connects after the renewal")
	}

	stopGuessing()
	if n := <-guesses; n == 0 {
		t.Fatal("no password was guessed")
	} else {
		t.Logf("%d wrong passwords refused meanwhile", n)
	}
}
