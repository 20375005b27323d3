package broker

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/testutil"
)

func TestMetadataTLSSettingsConfig(t *testing.T) {
	cfg := DefaultConfig()
	if got := metadataEndpointIdentification(cfg); got != "https" {
		t.Fatalf("default endpoint identification %q, want https", got)
	}
	props := `
metadata.etcd.client.url=https://127.0.0.1:2379
metadata.etcd.peer.url=https://127.0.0.1:2380
metadata.etcd.ssl.keystore.location=/etc/samsa/etcd-keystore.pem
metadata.etcd.ssl.truststore.location=/etc/samsa/etcd-ca.pem
metadata.etcd.ssl.endpoint.identification.algorithm=
`
	if err := cfg.LoadProperties(strings.NewReader(props)); err != nil {
		t.Fatal(err)
	}
	if cfg.MetadataTLSKeystore != "/etc/samsa/etcd-keystore.pem" || cfg.MetadataTLSTruststore != "/etc/samsa/etcd-ca.pem" || !cfg.MetadataTLSSkipHostnameCheck {
		t.Fatalf("got keystore %q, truststore %q, skip host name check %v", cfg.MetadataTLSKeystore, cfg.MetadataTLSTruststore, cfg.MetadataTLSSkipHostnameCheck)
	}
	if err := cfg.Set("metadata.etcd.ssl.endpoint.identification.algorithm", "HTTPS"); err != nil || cfg.MetadataTLSSkipHostnameCheck {
		t.Fatalf("https: %v, skip %v", err, cfg.MetadataTLSSkipHostnameCheck)
	}
	if err := cfg.Set("metadata.etcd.ssl.endpoint.identification.algorithm", "dns"); !errors.Is(err, ErrConfig) {
		t.Fatalf("dns: got %v, want ErrConfig", err)
	}
}

// The etcd TLS settings must match the etcd URLs in use; a mismatch, or
// key material that does not load, stops the broker at start, before any
// etcd member runs.
func TestMetadataTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "etcd-ca")
	cert, key := ca.Issue(t, pkix.Name{CommonName: "broker"}, true)
	keystore := testutil.WriteKeystore(t, dir, "keystore.pem", cert, key)
	truststore := ca.WriteCert(t, dir, "ca.pem")
	https := func(c *Config) { c.MetadataClientURL, c.MetadataPeerURL = "https://127.0.0.1:0", "https://127.0.0.1:0" }
	files := func(c *Config) { c.MetadataTLSKeystore, c.MetadataTLSTruststore = keystore, truststore }

	for _, tt := range []struct {
		name string
		set  func(*Config)
		want string // in the error
	}{
		{"https without settings", https, "metadata.etcd.ssl.keystore.location"},
		{"https without truststore", func(c *Config) { https(c); c.MetadataTLSKeystore = keystore }, "metadata.etcd.ssl.truststore.location"},
		{"settings with http", files, "are http"},
		{"https client, http peer", func(c *Config) { files(c); c.MetadataClientURL = "https://127.0.0.1:0" }, "mix https"},
		{"http initial cluster member", func(c *Config) {
			https(c)
			files(c)
			c.MetadataPeerURL = "https://127.0.0.1:2380"
			c.MetadataInitialCluster = "samsa-1=https://127.0.0.1:2380,samsa-2=http://127.0.0.1:2381"
		}, "mix https"},
		{"external https without settings", func(c *Config) { c.MetadataEndpoints = []string{"https://127.0.0.1:1"} }, "metadata.etcd.endpoints are https"},
		{"external http with settings", func(c *Config) { files(c); c.MetadataEndpoints = []string{"http://127.0.0.1:1"} }, "are http"},
		{"missing keystore", func(c *Config) {
			https(c)
			files(c)
			c.MetadataTLSKeystore = filepath.Join(dir, "absent.pem")
		}, "absent.pem"},
		{"keystore without key", func(c *Config) { https(c); files(c); c.MetadataTLSKeystore = truststore }, "private key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
			cfg.DataDir = t.TempDir()
			cfg.MetadataClientURL, cfg.MetadataPeerURL = "http://127.0.0.1:0", "http://127.0.0.1:0"
			cfg.Logger = quietLogger()
			tt.set(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b, err := Start(ctx, cfg)
			if err == nil {
				b.Close()
				t.Fatal("started")
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}

	t.Run("valid", func(t *testing.T) {
		cfg := DefaultConfig()
		files(&cfg)
		cfg.MetadataEndpoints = []string{"https://etcd-1.example:2379", "https://etcd-2.example:2379"}
		tc, err := cfg.metadataTLS()
		if err != nil || tc == nil {
			t.Fatalf("got %v, %v; want a TLS configuration", tc, err)
		}
		// The keystore file's certificate comes from GetClientCertificate
		// (reloaded when the file changes).
		hasCert := len(tc.Certificates) == 1 || tc.GetClientCertificate != nil
		if !hasCert || tc.RootCAs == nil || tc.ServerName != "" || tc.InsecureSkipVerify {
			t.Fatalf("client certificate %v, roots %v, server name %q, skip verify %v; want the keystore's, the truststore, none (per endpoint), false",
				hasCert, tc.RootCAs != nil, tc.ServerName, tc.InsecureSkipVerify)
		}
		cfg.MetadataEndpoints = nil
		if tc, err := cfg.metadataTLS(); err == nil || tc != nil {
			t.Fatalf("TLS settings with the default http URLs: %v, %v", tc, err)
		}
	})
}
