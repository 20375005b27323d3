package main

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/testutil"
	samsatest "github.com/samsa-io/samsa/test"
)

// The client commands against a broker whose only listener is SASL_SSL:
// --command-config carries Kafka's client security settings (a JAAS config
// continued over lines included), `user scram set|list|delete` manage
// credentials that take effect at the next login, and a command without
// credentials fails rather than hangs.
func TestE2ECommandConfigAndScramUsers(t *testing.T) {
	_, dir, truststore, b := startTLSBroker(t, "SASL_SSL", map[string]string{
		"sasl.enabled.mechanisms":                               "SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
	}, broker.InitialScram{Mechanism: "SCRAM-SHA-256", User: "admin", Password: "admin-secret", Iterations: 4096})
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}

	props := func(name, mechanism, user, pass string) string {
		p := filepath.Join(dir, name)
		body := fmt.Sprintf(`# a client.properties as Kafka's tools take it
security.protocol=SASL_SSL
sasl.mechanism=%s
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="%s" \
    password="%s";
ssl.truststore.type=PEM
ssl.truststore.location=%s
client.id=ignored
`, mechanism, user, pass, truststore)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	admin := props("admin.properties", "SCRAM-SHA-256", "admin", "admin-secret")
	pwFile := filepath.Join(dir, "alice.txt")
	if err := os.WriteFile(pwFile, []byte("alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	c.ok("Set SCRAM-SHA-512 credential of user alice.\n", "user", "scram", "set", "alice", "--mechanism", "SCRAM-SHA-512",
		"--password-file", pwFile, "--command-config", admin)
	c.ok("USER   MECHANISM      ITERATIONS\nadmin  SCRAM-SHA-256  4096\nalice  SCRAM-SHA-512  4096\n",
		"user", "scram", "list", "--command-config", admin)

	alice := props("alice.properties", "SCRAM-SHA-512", "alice", "alice-secret")
	c.ok("Created topic secured.\n", "topic", "create", "secured", "--partitions", "2", "--command-config", alice)
	c.okIn("a\nb\nc\n", "Produced 3 records to topic secured.\n", "produce", "secured", "--command-config", alice)
	out, errOut, err := c.run("", "consume", "secured", "--from-beginning", "--max-messages", "3", "--timeout", "20s", "--command-config", alice)
	if err != nil {
		t.Fatalf("consume as alice: %v (stderr %q)", err, errOut)
	}
	got := strings.Fields(out)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("consumed %q, want a, b and c", out)
	}

	// Without credentials, or with a wrong password, commands fail.
	if _, _, err := c.run("", "topic", "list", "--timeout", "5s"); err == nil {
		t.Error("topic list without --command-config succeeded against a SASL_SSL listener")
	}
	wrong := props("wrong.properties", "SCRAM-SHA-512", "alice", "nope")
	if _, _, err := c.run("", "topic", "list", "--timeout", "5s", "--command-config", wrong); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	c.ok("Deleted SCRAM-SHA-512 credential of user alice.\n", "user", "scram", "delete", "alice", "--mechanism", "SCRAM-SHA-512",
		"--command-config", admin)
	if _, _, err := c.run("", "topic", "list", "--timeout", "5s", "--command-config", alice); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a deleted user: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if _, _, err := c.run("", "user", "scram", "list", "alice", "--command-config", admin); !errors.Is(err, kerr.ResourceNotFound) {
		t.Errorf("listing a deleted user: %v, want RESOURCE_NOT_FOUND", err)
	}

	// Bad client settings are refused before connecting.
	bad := filepath.Join(dir, "bad.properties")
	if err := os.WriteFile(bad, []byte("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"a\" password=\"b\";\nssl.truststore.location="+truststore+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.run("", "topic", "list", "--command-config", bad); err == nil || !strings.Contains(err.Error(), "sasl.mechanism") {
		t.Errorf("sasl.mechanism=GSSAPI: %v, want an error naming sasl.mechanism", err)
	}
}

// --command-config with security.protocol=SSL and a client keystore: the
// CLI authenticates with its certificate to a listener that requires one.
func TestE2ECommandConfigMutualTLS(t *testing.T) {
	ca, dir, truststore, b := startTLSBroker(t, "SSL", map[string]string{"ssl.client.auth": "required"})
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}
	ccert, ckey := ca.Issue(t, pkix.Name{CommonName: "operator"}, false)
	clientKeystore := testutil.WriteKeystore(t, dir, "operator.pem", ccert, ckey)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withCert := write("mtls.properties", "security.protocol=SSL\nssl.truststore.location="+truststore+
		"\nssl.keystore.type=PEM\nssl.keystore.location="+clientKeystore+"\n")
	noCert := write("tls.properties", "security.protocol=SSL\nssl.truststore.location="+truststore+"\n")

	c.ok("Created topic m.\n", "topic", "create", "m", "--command-config", withCert)
	c.ok("m\n", "topic", "list", "--command-config", withCert)
	if _, _, err := c.run("", "topic", "list", "--timeout", "5s", "--command-config", noCert); err == nil {
		t.Error("topic list without a client certificate succeeded against ssl.client.auth=required")
	}
}

// startTLSBroker starts a broker whose only listener is of protocol proto
// (SSL or SASL_SSL) with a certificate of a new CA, the given settings and
// SCRAM users; it returns the CA, a directory for files, the truststore
// (the CA, PEM) and the broker.
func startTLSBroker(t *testing.T, proto string, settings map[string]string, users ...broker.InitialScram) (*testutil.CA, string, string, *samsatest.Broker) {
	t.Helper()
	ca := testutil.NewCA(t, "cli CA")
	dir := t.TempDir()
	cert, key := ca.Issue(t, pkix.Name{CommonName: "broker"}, true)
	keystore := testutil.WriteKeystore(t, dir, "broker.pem", cert, key)
	truststore := ca.WriteCert(t, dir, "ca.pem")
	b := samsatest.StartBroker(t, func(cfg *broker.Config) {
		cfg.Listeners = []string{proto + "://127.0.0.1:0"}
		all := map[string]string{"ssl.keystore.location": keystore, "ssl.truststore.location": truststore}
		maps.Copy(all, settings)
		for k, v := range all {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		cfg.InitialScram = users
	})
	return ca, dir, truststore, b
}
