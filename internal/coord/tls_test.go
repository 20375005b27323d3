package coord

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/testutil"
)

// tlsFixture is a CA with a member keystore and a truststore written to a
// temporary directory.
type tlsFixture struct {
	ca         *testutil.CA
	keystore   string // member: key and chain, certificate first
	truststore string // the CA
}

func newTLSFixture(t *testing.T) tlsFixture {
	t.Helper()
	dir := t.TempDir()
	ca := testutil.NewCA(t, "etcd-test-ca")
	cert, key := ca.Issue(t, pkix.Name{CommonName: "etcd-member"}, true)
	// Certificate before key: the member must not depend on the order.
	keystore := filepath.Join(dir, "member.pem")
	if err := os.WriteFile(keystore, append(append([]byte(nil), cert...), key...), 0o600); err != nil {
		t.Fatal(err)
	}
	return tlsFixture{ca: ca, keystore: keystore, truststore: ca.WriteCert(t, dir, "ca.pem")}
}

// clientTLS is a client configuration trusting roots, presenting the
// certificate in certPEM/keyPEM if given.
func clientTLS(t *testing.T, roots *testutil.CA, certPEM, keyPEM []byte) *tls.Config {
	t.Helper()
	c := &tls.Config{RootCAs: roots.Pool(), MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c
}

// An embedded member with https client and peer URLs serves clients with a
// certificate of its truststore, and refuses those without one or with one
// from another CA, and those that do not trust its certificate.
func TestEmbeddedTLS(t *testing.T) {
	fx := newTLSFixture(t)
	dir := t.TempDir()
	e, err := StartEmbedded(testCtx(t), EmbeddedConfig{
		Dir: dir, Name: "secure", ClientURL: "https://127.0.0.1:0", PeerURL: "https://127.0.0.1:0",
		KeystoreFile: fx.keystore, TruststoreFile: fx.truststore, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	eps := e.Endpoints()
	if len(eps) != 1 || !strings.HasPrefix(eps[0], "https://127.0.0.1:") {
		t.Fatalf("endpoints %v, want one https://127.0.0.1 URL", eps)
	}
	for _, name := range []string{"member.crt", "member.key"} {
		fi, err := os.Stat(filepath.Join(dir, tlsDirName, name))
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Fatalf("%s has mode %v, want 0600", name, mode)
		}
	}

	clientCert, clientKey := fx.ca.Issue(t, pkix.Name{CommonName: "samsa-client"}, false)
	memberCert, memberKey := fx.ca.Issue(t, pkix.Name{CommonName: "samsa-broker"}, true)
	for _, tt := range []struct {
		name string
		tls  *tls.Config
	}{
		{"client certificate", clientTLS(t, fx.ca, clientCert, clientKey)},
		// What a broker presents: its keystore's server certificate,
		// which names 127.0.0.1 (etcd checks a client certificate's
		// names against the connecting address).
		{"server certificate as client certificate", clientTLS(t, fx.ca, memberCert, memberKey)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := connect(t, eps, clusterName(t), WithTLS(tt.tls))
			id, err := c.ClusterID(testCtx(t)) // a write, then reads
			if err != nil {
				t.Fatal(err)
			}
			topic, _ := createTopic(t, c, "over-tls", 2)
			vt, err := c.Topic(testCtx(t), "over-tls")
			if err != nil || vt.Topic.ID != topic.ID {
				t.Fatalf("topic read back %+v, %v; want id %v", vt.Topic, err, topic.ID)
			}
			if again, err := connect(t, eps, c.Cluster(), WithTLS(tt.tls)).ClusterID(testCtx(t)); err != nil || again != id {
				t.Fatalf("cluster id from a second client %q, %v; want %q", again, err, id)
			}
		})
	}

	other := testutil.NewCA(t, "other-ca")
	otherCert, otherKey := other.Issue(t, pkix.Name{CommonName: "intruder"}, false)
	for _, tt := range []struct {
		name string
		tls  *tls.Config
	}{
		{"no client certificate", clientTLS(t, fx.ca, nil, nil)},
		{"certificate of another CA", clientTLS(t, fx.ca, otherCert, otherKey)},
		{"server not trusted", clientTLS(t, other, clientCert, clientKey)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			start := time.Now()
			c, err := Connect(ctx, eps, clusterName(t), WithTLS(tt.tls), WithDialTimeout(time.Second), WithLogger(quietLogger()))
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			mustIs(t, err, ErrUnavailable)
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Fatalf("refusal took %v", elapsed)
			}
		})
	}

	t.Run("plaintext client", func(t *testing.T) {
		c, err := Connect(testCtx(t), eps, clusterName(t), WithLogger(quietLogger()))
		if err == nil {
			c.Close()
		}
		mustIs(t, err, ErrInvalid)
		// Without scheme the endpoint follows the client's setting: a
		// plaintext client's requests fail against the TLS port.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		bare := strings.TrimPrefix(eps[0], "https://")
		c, err = Connect(ctx, []string{bare}, clusterName(t), WithDialTimeout(time.Second), WithLogger(quietLogger()))
		if err == nil {
			c.Close()
			t.Fatal("a plaintext client connected to the TLS port")
		}
		mustIs(t, err, ErrUnavailable)
	})
}

func TestEmbeddedTLSValidates(t *testing.T) {
	fx := newTLSFixture(t)
	badKeystore := filepath.Join(t.TempDir(), "no-key.pem")
	if err := os.WriteFile(badKeystore, fx.ca.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  EmbeddedConfig
	}{
		{"https without files", EmbeddedConfig{ClientURL: "https://127.0.0.1:0", PeerURL: "https://127.0.0.1:0"}},
		{"https without truststore", EmbeddedConfig{ClientURL: "https://127.0.0.1:0", PeerURL: "https://127.0.0.1:0", KeystoreFile: fx.keystore}},
		{"files with http", EmbeddedConfig{ClientURL: "http://127.0.0.1:0", PeerURL: "http://127.0.0.1:0", KeystoreFile: fx.keystore, TruststoreFile: fx.truststore}},
		{"https client, http peer", EmbeddedConfig{ClientURL: "https://127.0.0.1:0", PeerURL: "127.0.0.1:0", KeystoreFile: fx.keystore, TruststoreFile: fx.truststore}},
		{"http initial cluster", EmbeddedConfig{
			Name: "a", ClientURL: "https://127.0.0.1:0", PeerURL: "https://127.0.0.1:1",
			InitialCluster: "a=https://127.0.0.1:1,b=http://127.0.0.1:2",
			KeystoreFile:   fx.keystore, TruststoreFile: fx.truststore,
		}},
		{"keystore without key", EmbeddedConfig{ClientURL: "https://127.0.0.1:0", PeerURL: "https://127.0.0.1:0", KeystoreFile: badKeystore, TruststoreFile: fx.truststore}},
		{"missing truststore", EmbeddedConfig{ClientURL: "https://127.0.0.1:0", PeerURL: "https://127.0.0.1:0", KeystoreFile: fx.keystore, TruststoreFile: badKeystore + ".absent"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Dir, tt.cfg.Logger = t.TempDir(), quietLogger()
			e, err := StartEmbedded(testCtx(t), tt.cfg)
			if err == nil {
				e.Close()
			}
			mustIs(t, err, ErrInvalid)
		})
	}
	t.Run("http endpoint with TLS", func(t *testing.T) {
		c, err := Connect(testCtx(t), []string{"http://127.0.0.1:1"}, "x", WithTLS(clientTLS(t, fx.ca, nil, nil)))
		if err == nil {
			c.Close()
		}
		mustIs(t, err, ErrInvalid)
	})
}

// Three members talk over https peer URLs with client certificate
// authentication; a write through one member is read through another.
func TestEmbeddedTLSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd members")
	}
	fx := newTLSFixture(t)
	names := []string{"tls-a", "tls-b", "tls-c"}
	peers := make([]string, len(names))
	initial := make([]string, len(names))
	for i, n := range names {
		peers[i] = "https://127.0.0.1:" + freePort(t)
		initial[i] = n + "=" + peers[i]
	}
	members := make([]*Embedded, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		// Each member's own keystore; all issued by the truststore's CA.
		cert, key := fx.ca.Issue(t, pkix.Name{CommonName: n}, true)
		keystore := testutil.WriteKeystore(t, t.TempDir(), "keystore.pem", cert, key)
		cfg := EmbeddedConfig{
			Dir: t.TempDir(), Name: n, ClientURL: "https://127.0.0.1:0", PeerURL: peers[i],
			InitialCluster: strings.Join(initial, ","),
			KeystoreFile:   keystore, TruststoreFile: fx.truststore, Logger: quietLogger(),
		}
		// Every member waits for a quorum before it is ready.
		wg.Go(func() { members[i], errs[i] = StartEmbedded(testCtx(t), cfg) })
	}
	wg.Wait()
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, m := range members {
			if m != nil {
				wg.Go(func() { m.Close() })
			}
		}
		wg.Wait()
	})
	for i := range members {
		if errs[i] != nil {
			t.Fatalf("member %s: %v", names[i], errs[i])
		}
	}
	cert, key := fx.ca.Issue(t, pkix.Name{CommonName: "samsa-client"}, false)
	tc := clientTLS(t, fx.ca, cert, key)
	cluster := clusterName(t)
	ids := make([]string, len(members))
	for i, m := range members {
		c := connect(t, m.Endpoints(), cluster, WithTLS(tc))
		id, err := c.ClusterID(testCtx(t))
		if err != nil {
			t.Fatalf("through %s: %v", names[i], err)
		}
		ids[i] = id
	}
	if ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("cluster ids %v differ between members", ids)
	}
}
