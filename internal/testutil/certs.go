package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority for tests: a self-signed ECDSA P-256
// certificate that issues server and client certificates. Tests of TLS
// listeners, of the broker's inter-broker connections and of the CLI share it,
// so that none needs certificate files in testdata (they would expire).
type CA struct {
	// Cert is the CA's certificate, Key its private key.
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey

	certPEM []byte
}

// certLifetime is how long the certificates made here are valid; they start
// an hour in the past, so a clock slightly behind does not make them fail.
const certLifetime = 30 * 24 * time.Hour

// NewCA makes a CA whose subject is CN=cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, Key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// CertPEM is the CA's certificate in PEM, as a truststore holds it.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// Pool is a certificate pool holding only the CA, for a tls.Config's
// RootCAs or ClientCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WriteCert writes the CA's certificate in PEM to dir/name (a truststore,
// as Kafka's ssl.truststore.location with ssl.truststore.type=PEM) and
// returns the file's path.
func (ca *CA) WriteCert(t testing.TB, dir, name string) string {
	t.Helper()
	return WriteTruststore(t, dir, name, ca)
}

// Issue makes a leaf certificate signed by the CA, with a new ECDSA P-256
// key, and returns both in PEM (the key in PKCS #8, "PRIVATE KEY", the
// only form Kafka's PEM keystores accept).
//
// A server certificate has the subject alternative names 127.0.0.1, ::1 and
// localhost plus dnsNames, and both the server and the client extended key
// usage, because a broker presents its certificate as a server to clients
// and as a client to the other brokers. A client certificate has the client
// extended key usage only, and dnsNames (if any) as its names.
func (ca *CA) Issue(t testing.TB, subject pkix.Name, server bool, dnsNames ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:     subject,
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		DNSNames:    append([]string(nil), dnsNames...),
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		tmpl.DNSNames = append([]string{"localhost"}, dnsNames...)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}

// WriteKeystore writes a private key and its certificate chain, both PEM,
// into one file dir/name, key first, as Kafka's ssl.keystore.location with
// ssl.keystore.type=PEM holds them, and returns the file's path.
func WriteKeystore(t testing.TB, dir, name string, certPEM, keyPEM []byte) string {
	t.Helper()
	data := append(append([]byte(nil), keyPEM...), certPEM...)
	return writeFile(t, dir, name, data)
}

// WriteTruststore writes the certificates of the CAs, PEM, one after the
// other, into dir/name and returns the file's path.
func WriteTruststore(t testing.TB, dir, name string, cas ...*CA) string {
	t.Helper()
	var data []byte
	for _, ca := range cas {
		data = append(data, ca.certPEM...)
	}
	return writeFile(t, dir, name, data)
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
