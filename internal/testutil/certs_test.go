package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"testing"
)

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, rest := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" || len(rest) != 0 {
		t.Fatalf("want one CERTIFICATE block, got %q", certPEM)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIssueServer(t *testing.T) {
	ca := NewCA(t, "test CA")
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "test CA" {
		t.Fatalf("CA certificate: IsCA %v, subject %v", ca.Cert.IsCA, ca.Cert.Subject)
	}
	certPEM, keyPEM := ca.Issue(t, pkix.Name{CommonName: "broker-1", Organization: []string{"samsa"}}, true, "broker-1.example")
	cert := parseCert(t, certPEM)
	if got := cert.Subject.String(); got != "CN=broker-1,O=samsa" {
		t.Errorf("subject = %q", got)
	}
	for _, name := range []string{"localhost", "127.0.0.1", "::1", "broker-1.example"} {
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("verify for %s, usage %v: %v", name, usage, err)
			}
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "other.example"}); err == nil {
		t.Error("certificate valid for a name it was not issued for")
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: NewCA(t, "other CA").Pool()}); err == nil {
		t.Error("certificate verified by another CA")
	}

	// The key is PKCS #8 and belongs to the certificate.
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Errorf("key PEM is not a PRIVATE KEY block: %q", keyPEM)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Error(err)
	}
}

func TestIssueClient(t *testing.T) {
	ca := NewCA(t, "test CA")
	certPEM, _ := ca.Issue(t, pkix.Name{CommonName: "alice"}, false)
	cert := parseCert(t, certPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("verify for client use: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client certificate valid for server use")
	}
	if len(cert.IPAddresses) != 0 || len(cert.DNSNames) != 0 {
		t.Errorf("client certificate names %v %v, want none", cert.IPAddresses, cert.DNSNames)
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := NewCA(t, "CA 1"), NewCA(t, "CA 2")
	certPEM, keyPEM := ca1.Issue(t, pkix.Name{CommonName: "broker-1"}, true)

	ks := WriteKeystore(t, dir, "broker.pem", certPEM, keyPEM)
	data, err := os.ReadFile(ks)
	if err != nil {
		t.Fatal(err)
	}
	// One file holds both; X509KeyPair takes the blocks of its type from each.
	if _, err := tls.X509KeyPair(data, data); err != nil {
		t.Errorf("keystore file: %v", err)
	}

	pool := x509.NewCertPool()
	data, err = os.ReadFile(WriteTruststore(t, dir, "trust.pem", ca1, ca2))
	if err != nil {
		t.Fatal(err)
	}
	if !pool.AppendCertsFromPEM(data) {
		t.Fatal("truststore holds no certificate")
	}
	cert := parseCert(t, certPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("verify with the truststore of both CAs: %v", err)
	}

	data, err = os.ReadFile(ca2.WriteCert(t, dir, "ca2.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(ca2.CertPEM()) {
		t.Error("WriteCert wrote something else than CertPEM")
	}
}
