package auth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/testutil"
)

// handshakeResult is both ends of one TLS connection.
type handshakeResult struct {
	serverErr, clientErr error
	server, client       tls.ConnectionState
}

func (r handshakeResult) ok() bool { return r.serverErr == nil && r.clientErr == nil }

// handshake connects a client to a server over 127.0.0.1 and runs the
// handshake on both ends. The server writes one byte once it accepted the
// client, and the client reads it: in TLS 1.3 the client's handshake is done
// before the server has checked the client's certificate, so the server's
// verdict (the byte or an alert) arrives only then.
func handshake(t *testing.T, server, client *tls.Config) handshakeResult {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type result struct {
		err   error
		state tls.ConnectionState
	}
	done := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		s := tls.Server(c, server)
		err = s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		done <- result{err: err, state: s.ConnectionState()}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	cl := tls.Client(c, client)
	err = cl.Handshake()
	if err == nil {
		_, err = io.ReadFull(cl, make([]byte, 1))
	}
	r := <-done
	return handshakeResult{serverErr: r.err, clientErr: err, server: r.state, client: cl.ConnectionState()}
}

// fakeClock is the reload check's clock, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// errorLog collects the errors given to onReloadError.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) get() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// rewrite replaces the content of path and moves its modification time a
// minute later than it was, so that a reload check sees a change even if
// the size stays the same and the file system's clock is coarse.
func rewrite(t *testing.T, path string, data []byte) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	later := info.ModTime().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

// der is the DER of the first certificate of certPEM.
func der(t *testing.T, certPEM []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatal("no certificate in PEM")
	}
	return b.Bytes
}

// servedCert is the server certificate the client saw.
func servedCert(t *testing.T, r handshakeResult) []byte {
	t.Helper()
	if !r.ok() {
		t.Fatalf("handshake failed: server: %v, client: %v", r.serverErr, r.clientErr)
	}
	if len(r.client.PeerCertificates) == 0 {
		t.Fatal("client saw no server certificate")
	}
	return r.client.PeerCertificates[0].Raw
}

var serverSubject = pkix.Name{CommonName: "broker-1", Organization: []string{"samsa"}}

// pki is a CA with a server keystore and a truststore holding the CA, as
// files in a temporary directory.
type pki struct {
	dir        string
	ca         *testutil.CA
	certPEM    []byte // the server's certificate
	keyPEM     []byte
	keystore   string // the server's key and certificate
	truststore string // the CA
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), ca: testutil.NewCA(t, "samsa test CA")}
	p.certPEM, p.keyPEM = p.ca.Issue(t, serverSubject, true)
	p.keystore = testutil.WriteKeystore(t, p.dir, "broker.pem", p.certPEM, p.keyPEM)
	p.truststore = p.ca.WriteCert(t, p.dir, "ca.pem")
	return p
}

// clientKeystore issues a client certificate for subject and writes it.
func (p *pki) clientKeystore(t *testing.T, name string, subject pkix.Name) string {
	t.Helper()
	certPEM, keyPEM := p.ca.Issue(t, subject, false)
	return testutil.WriteKeystore(t, p.dir, name, certPEM, keyPEM)
}

func mustServer(t *testing.T, s TLSSettings) *ServerTLS {
	t.Helper()
	srv, err := NewServerTLS(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func mustClient(t *testing.T, s TLSSettings, serverName string) *tls.Config {
	t.Helper()
	c, err := ClientConfig(s, serverName)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHandshake(t *testing.T) {
	p := newPKI(t)
	srv := mustServer(t, TLSSettings{KeystoreType: "PEM", KeystoreLocation: p.keystore})
	if got := srv.Config().MinVersion; got != tls.VersionTLS12 {
		t.Errorf("MinVersion = %x, want TLS 1.2", got)
	}
	for _, name := range []string{"localhost", "127.0.0.1", "localhost:9093"} {
		t.Run(name, func(t *testing.T) {
			client := mustClient(t, TLSSettings{TruststoreType: "PEM", TruststoreLocation: p.truststore}, name)
			r := handshake(t, srv.Config(), client)
			if got := servedCert(t, r); !bytes.Equal(got, der(t, p.certPEM)) {
				t.Error("client saw another certificate than the keystore's")
			}
			if r.client.Version != tls.VersionTLS13 {
				t.Errorf("version = %x, want TLS 1.3", r.client.Version)
			}
		})
	}
}

func TestHandshakeUntrustedServer(t *testing.T) {
	p := newPKI(t)
	srv := mustServer(t, TLSSettings{KeystoreLocation: p.keystore})
	other := testutil.NewCA(t, "other CA")
	for _, ident := range []string{"https", ""} {
		client := mustClient(t, TLSSettings{TruststoreCerts: string(other.CertPEM()), EndpointIdentification: ident}, "localhost")
		if r := handshake(t, srv.Config(), client); r.clientErr == nil {
			t.Errorf("endpoint identification %q: a server certificate from an untrusted CA was accepted", ident)
		}
	}
}

func TestEndpointIdentification(t *testing.T) {
	p := newPKI(t)
	srv := mustServer(t, TLSSettings{KeystoreLocation: p.keystore})

	// https: the certificate must name the host.
	client := mustClient(t, TLSSettings{TruststoreLocation: p.truststore, EndpointIdentification: "https"}, "broker.example.com")
	r := handshake(t, srv.Config(), client)
	var hostErr x509.HostnameError
	if !errors.As(r.clientErr, &hostErr) {
		t.Errorf("https with a host the certificate does not name: client error %v, want a x509.HostnameError", r.clientErr)
	}

	// Empty: any name, but still a trusted chain.
	client = mustClient(t, TLSSettings{TruststoreLocation: p.truststore}, "broker.example.com")
	if got := servedCert(t, handshake(t, srv.Config(), client)); !bytes.Equal(got, der(t, p.certPEM)) {
		t.Error("client saw another certificate than the keystore's")
	}
	if client.ServerName != "broker.example.com" {
		t.Errorf("ServerName = %q, want it sent as SNI", client.ServerName)
	}

	if _, err := ClientConfig(TLSSettings{EndpointIdentification: "ldap"}, "localhost"); !errors.Is(err, ErrTLSSettings) {
		t.Errorf("endpoint identification ldap: error %v, want ErrTLSSettings", err)
	}
}

func TestClientAuth(t *testing.T) {
	p := newPKI(t)
	alice := p.clientKeystore(t, "alice.pem", pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}, Country: []string{"US"}})
	otherCA := testutil.NewCA(t, "other CA")
	mallory := func() string {
		certPEM, keyPEM := otherCA.Issue(t, pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}, Country: []string{"US"}}, false)
		return testutil.WriteKeystore(t, p.dir, "mallory.pem", certPEM, keyPEM)
	}()
	mapper, err := ParsePrincipalMappingRules(`RULE:^CN=([^,]*),OU=eng,.*$/$1/L,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}

	const (
		anonymous = "User:ANONYMOUS"
		refused   = "refused"
	)
	tests := []struct {
		clientAuth string
		keystore   string // the client's, or none
		// force makes the client send its certificate even if it is not
		// from a CA the server names in its request (a Go or Java client
		// then sends none).
		force bool
		want  string // principal, or refused
	}{
		{"none", "", false, anonymous},
		{"none", alice, false, anonymous}, // not asked for
		{"", alice, false, anonymous},
		{"requested", "", false, anonymous},
		{"requested", alice, false, "User:alice"},
		{"requested", mallory, false, anonymous},
		{"requested", mallory, true, refused},
		{"required", "", false, refused},
		{"required", mallory, false, refused},
		{"required", mallory, true, refused},
		{"required", alice, false, "User:alice"},
		{"REQUIRED", alice, false, "User:alice"},
	}
	for _, tt := range tests {
		name := tt.clientAuth + "/"
		switch tt.keystore {
		case "":
			name += "no certificate"
		case alice:
			name += "trusted certificate"
		default:
			name += "certificate of another CA"
		}
		if tt.force {
			name += " sent anyway"
		}
		t.Run(name, func(t *testing.T) {
			srv := mustServer(t, TLSSettings{KeystoreLocation: p.keystore, TruststoreLocation: p.truststore, ClientAuth: tt.clientAuth})
			client := mustClient(t, TLSSettings{KeystoreLocation: tt.keystore, TruststoreLocation: p.truststore}, "localhost")
			if tt.force {
				cert, err := loadKeystore(TLSSettings{KeystoreLocation: tt.keystore})
				if err != nil {
					t.Fatal(err)
				}
				client.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
			}
			r := handshake(t, srv.Config(), client)
			if tt.want == refused {
				if r.serverErr == nil || r.clientErr == nil {
					t.Fatalf("accepted (server error %v, client error %v), want refused", r.serverErr, r.clientErr)
				}
				if !strings.Contains(r.serverErr.Error(), "certificate") {
					t.Errorf("server error %q is not about the client's certificate", r.serverErr)
				}
				return
			}
			if !r.ok() {
				t.Fatalf("refused: server: %v, client: %v", r.serverErr, r.clientErr)
			}
			if got := mapper.PeerPrincipal(r.server); got != tt.want {
				t.Errorf("principal = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClientAuthNeedsTruststore(t *testing.T) {
	p := newPKI(t)
	for _, auth := range []string{"required", "requested"} {
		_, err := NewServerTLS(TLSSettings{KeystoreLocation: p.keystore, ClientAuth: auth}, nil)
		if !errors.Is(err, ErrTLSSettings) || !strings.Contains(err.Error(), "truststore") {
			t.Errorf("ssl.client.auth=%s without a truststore: error %v, want one about the truststore", auth, err)
		}
	}
}

func TestProtocols(t *testing.T) {
	p := newPKI(t)
	roots := p.ca.Pool()

	// A TLS 1.1 client is refused by default; the same client with TLS
	// 1.2 is not.
	srv := mustServer(t, TLSSettings{KeystoreLocation: p.keystore})
	tls11 := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	if r := handshake(t, srv.Config(), tls11); r.serverErr == nil || r.clientErr == nil {
		t.Errorf("TLS 1.1 client accepted (server error %v, client error %v)", r.serverErr, r.clientErr)
	}
	tls12 := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}
	if r := handshake(t, srv.Config(), tls12); !r.ok() || r.server.Version != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 client: server error %v, client error %v, version %x", r.serverErr, r.clientErr, r.server.Version)
	}

	// TLS 1.3 only.
	srv = mustServer(t, TLSSettings{KeystoreLocation: p.keystore, EnabledProtocols: []string{"TLSv1.3"}})
	if r := handshake(t, srv.Config(), tls12); r.serverErr == nil {
		t.Error("TLS 1.2 client accepted with ssl.enabled.protocols=TLSv1.3")
	}
	client := mustClient(t, TLSSettings{TruststoreLocation: p.truststore, EnabledProtocols: []string{"TLSv1.3"}}, "localhost")
	if r := handshake(t, srv.Config(), client); !r.ok() || r.client.Version != tls.VersionTLS13 {
		t.Errorf("TLS 1.3: server error %v, client error %v, version %x", r.serverErr, r.clientErr, r.client.Version)
	}

	for _, protocols := range [][]string{{"TLSv1.1"}, {"TLSv1.2", "TLSv1"}, {"SSLv3"}, {"TLSv9"}} {
		if _, err := NewServerTLS(TLSSettings{KeystoreLocation: p.keystore, EnabledProtocols: protocols}, nil); !errors.Is(err, ErrTLSSettings) {
			t.Errorf("ssl.enabled.protocols=%v: error %v, want ErrTLSSettings", protocols, err)
		}
		if _, err := ClientConfig(TLSSettings{EnabledProtocols: protocols}, "localhost"); !errors.Is(err, ErrTLSSettings) {
			t.Errorf("client ssl.enabled.protocols=%v: error %v, want ErrTLSSettings", protocols, err)
		}
	}
}

func TestCipherSuites(t *testing.T) {
	p := newPKI(t)
	const suite = "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
	srv := mustServer(t, TLSSettings{KeystoreLocation: p.keystore, EnabledProtocols: []string{"TLSv1.2"}, CipherSuites: []string{suite}})
	client := mustClient(t, TLSSettings{TruststoreLocation: p.truststore}, "localhost")
	r := handshake(t, srv.Config(), client)
	if !r.ok() {
		t.Fatalf("server: %v, client: %v", r.serverErr, r.clientErr)
	}
	if got := tls.CipherSuiteName(r.client.CipherSuite); got != suite {
		t.Errorf("cipher suite = %s, want %s", got, suite)
	}
	for _, suites := range [][]string{{"TLS_RSA_WITH_RC4_128_SHA"}, {"TLS_NO_SUCH_SUITE"}} {
		if _, err := NewServerTLS(TLSSettings{KeystoreLocation: p.keystore, CipherSuites: suites}, nil); !errors.Is(err, ErrTLSSettings) {
			t.Errorf("ssl.cipher.suites=%v: error %v, want ErrTLSSettings", suites, err)
		}
	}
}

func TestInlinePEM(t *testing.T) {
	p := newPKI(t)
	clientCert, clientKey := p.ca.Issue(t, pkix.Name{CommonName: "alice"}, false)
	srv := mustServer(t, TLSSettings{
		KeystoreKey:       string(p.keyPEM),
		KeystoreCertChain: string(p.certPEM),
		TruststoreCerts:   string(p.ca.CertPEM()),
		ClientAuth:        "required",
	})
	client := mustClient(t, TLSSettings{
		KeystoreKey:       string(clientKey),
		KeystoreCertChain: string(clientCert),
		TruststoreCerts:   string(p.ca.CertPEM()),
	}, "localhost")
	r := handshake(t, srv.Config(), client)
	if got := servedCert(t, r); !bytes.Equal(got, der(t, p.certPEM)) {
		t.Error("client saw another certificate than the inline one")
	}
	if len(r.server.PeerCertificates) == 0 || !bytes.Equal(r.server.PeerCertificates[0].Raw, der(t, clientCert)) {
		t.Error("server saw another client certificate than the inline one")
	}
}

func TestReloadKeystore(t *testing.T) {
	p := newPKI(t)
	newCA := testutil.NewCA(t, "renewed CA")
	clock := newFakeClock()
	var reloadErrs errorLog
	srv, err := newServerTLS(TLSSettings{KeystoreLocation: p.keystore}, reloadErrs.add, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	trust := testutil.WriteTruststore(t, p.dir, "both.pem", p.ca, newCA)
	client := mustClient(t, TLSSettings{TruststoreLocation: trust}, "localhost")
	if got := servedCert(t, handshake(t, srv.Config(), client)); !bytes.Equal(got, der(t, p.certPEM)) {
		t.Fatal("first handshake: not the keystore's certificate")
	}

	renewedCert, renewedKey := newCA.Issue(t, serverSubject, true)
	rewrite(t, p.keystore, append(append([]byte(nil), renewedKey...), renewedCert...))

	// Within a second of the last check the file is not looked at.
	if got := servedCert(t, handshake(t, srv.Config(), client)); !bytes.Equal(got, der(t, p.certPEM)) {
		t.Error("the file was checked again within a second")
	}
	clock.Advance(time.Second)
	got := servedCert(t, handshake(t, srv.Config(), client))
	if !bytes.Equal(got, der(t, renewedCert)) {
		t.Fatal("after the keystore changed, new handshakes still get the old certificate")
	}
	if c, err := x509.ParseCertificate(got); err != nil || c.Issuer.CommonName != "renewed CA" {
		t.Errorf("served certificate issued by %v (%v), want the renewed CA", c.Issuer, err)
	}
	if errs := reloadErrs.get(); len(errs) != 0 {
		t.Errorf("reload errors: %v", errs)
	}
}

func TestReloadKeepsPreviousOnBadFile(t *testing.T) {
	p := newPKI(t)
	clock := newFakeClock()
	var reloadErrs errorLog
	srv, err := newServerTLS(TLSSettings{KeystoreLocation: p.keystore}, reloadErrs.add, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	client := mustClient(t, TLSSettings{TruststoreLocation: p.truststore}, "localhost")
	old := der(t, p.certPEM)
	renewedCert, renewedKey := p.ca.Issue(t, serverSubject, true)
	renewed := append(append([]byte(nil), renewedKey...), renewedCert...)

	steps := []struct {
		name      string
		content   []byte // written to the keystore before the step, if not nil
		want      []byte // certificate served
		errs      int    // reload errors reported so far
		errSubstr string // in the last error
	}{
		{"half-written", renewed[:len(renewed)-100], old, 1, "cut short"},
		{"unchanged bad file is not retried", nil, old, 1, ""},
		{"key of another certificate", append(append([]byte(nil), p.keyPEM...), renewedCert...), old, 2, "does not match"},
		{"complete", renewed, der(t, renewedCert), 2, ""},
	}
	for _, step := range steps {
		if step.content != nil {
			rewrite(t, p.keystore, step.content)
		}
		clock.Advance(2 * time.Second)
		if got := servedCert(t, handshake(t, srv.Config(), client)); !bytes.Equal(got, step.want) {
			t.Fatalf("%s: served the wrong certificate", step.name)
		}
		errs := reloadErrs.get()
		if len(errs) != step.errs {
			t.Fatalf("%s: %d reload errors (%v), want %d", step.name, len(errs), errs, step.errs)
		}
		if step.errSubstr == "" {
			continue
		}
		last := errs[len(errs)-1]
		for _, want := range []string{step.errSubstr, "ssl.keystore.location", p.keystore} {
			if !strings.Contains(last.Error(), want) {
				t.Errorf("%s: reload error %q does not say %q", step.name, last, want)
			}
		}
		if !errors.Is(last, ErrTLSSettings) {
			t.Errorf("%s: reload error %v does not wrap ErrTLSSettings", step.name, last)
		}
	}
}

func TestReloadTruststore(t *testing.T) {
	p := newPKI(t)
	clock := newFakeClock()
	srv, err := newServerTLS(TLSSettings{KeystoreLocation: p.keystore, TruststoreLocation: p.truststore, ClientAuth: "required"}, nil, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	newCA := testutil.NewCA(t, "new client CA")
	oldClient := mustClient(t, TLSSettings{KeystoreLocation: p.clientKeystore(t, "old.pem", pkix.Name{CommonName: "old"}), TruststoreLocation: p.truststore}, "localhost")
	newCert, newKey := newCA.Issue(t, pkix.Name{CommonName: "new"}, false)
	newClient := mustClient(t, TLSSettings{KeystoreLocation: testutil.WriteKeystore(t, p.dir, "new.pem", newCert, newKey), TruststoreLocation: p.truststore}, "localhost")

	if r := handshake(t, srv.Config(), oldClient); !r.ok() {
		t.Fatalf("client of the old CA refused: %v", r.serverErr)
	}
	if r := handshake(t, srv.Config(), newClient); r.serverErr == nil {
		t.Fatal("client of the new CA accepted before the truststore changed")
	}
	rewrite(t, p.truststore, newCA.CertPEM())
	clock.Advance(time.Second)
	if r := handshake(t, srv.Config(), newClient); !r.ok() {
		t.Errorf("client of the new CA refused after the truststore changed: %v", r.serverErr)
	}
	if r := handshake(t, srv.Config(), oldClient); r.serverErr == nil {
		t.Error("client of the old CA accepted after the truststore changed")
	}
}

// TestResumptionAfterTruststoreChange checks that a session ticket from
// before a reload does not let a client in whose CA the truststore no
// longer holds. (Go checks a resumed session's chains against the ClientCAs
// of the configuration GetConfigForClient returns.)
func TestResumptionAfterTruststoreChange(t *testing.T) {
	p := newPKI(t)
	clock := newFakeClock()
	srv, err := newServerTLS(TLSSettings{KeystoreLocation: p.keystore, TruststoreLocation: p.truststore, ClientAuth: "required"}, nil, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	client := mustClient(t, TLSSettings{KeystoreLocation: p.clientKeystore(t, "alice.pem", pkix.Name{CommonName: "alice"}), TruststoreLocation: p.truststore}, "localhost")
	client.ClientSessionCache = tls.NewLRUClientSessionCache(4)

	if r := handshake(t, srv.Config(), client); !r.ok() {
		t.Fatalf("first handshake: server: %v, client: %v", r.serverErr, r.clientErr)
	}
	r := handshake(t, srv.Config(), client)
	if !r.ok() || !r.server.DidResume {
		t.Fatalf("second handshake: resumed %v, server: %v, client: %v", r.server.DidResume, r.serverErr, r.clientErr)
	}
	if len(r.server.PeerCertificates) == 0 {
		t.Fatal("resumed session has no client certificate")
	}

	rewrite(t, p.truststore, testutil.NewCA(t, "new client CA").CertPEM())
	clock.Advance(time.Second)
	if r := handshake(t, srv.Config(), client); r.serverErr == nil {
		t.Errorf("client of a CA no longer trusted accepted (resumed: %v)", r.server.DidResume)
	}
}

func TestInlinePEMDoesNotReload(t *testing.T) {
	p := newPKI(t)
	srv := mustServer(t, TLSSettings{KeystoreKey: string(p.keyPEM), KeystoreCertChain: string(p.certPEM)})
	if files := srv.files(); len(files) != 0 {
		t.Errorf("files to watch = %v, want none", files)
	}
}

func TestKeystoreTypeRefused(t *testing.T) {
	p := newPKI(t)
	for _, s := range []TLSSettings{
		{KeystoreType: "JKS", KeystoreLocation: p.keystore},
		{KeystoreType: "PKCS12", KeystoreLocation: p.keystore},
		{KeystoreLocation: p.keystore, TruststoreType: "JKS", TruststoreLocation: p.truststore},
	} {
		_, err := NewServerTLS(s, nil)
		if !errors.Is(err, ErrTLSSettings) || !strings.Contains(err.Error(), "PEM") {
			t.Errorf("%+v: error %v, want one saying to use PEM", s, err)
		}
	}
	if _, err := ClientConfig(TLSSettings{TruststoreType: "PKCS12", TruststoreLocation: p.truststore}, "localhost"); !errors.Is(err, ErrTLSSettings) {
		t.Errorf("client with a PKCS12 truststore: error %v, want ErrTLSSettings", err)
	}
	if _, err := NewServerTLS(TLSSettings{KeystoreType: "pem", KeystoreLocation: p.keystore}, nil); err != nil {
		t.Errorf("keystore type pem: %v", err)
	}
}

// encryptedKey is an ECDSA P-256 key encrypted with PKCS #8 (password
// "secret"), made with openssl genpkey -aes-128-cbc.
const encryptedKey = `-----BEGIN ENCRYPTED PRIVATE KEY-----
MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAgQCj3x1aQkcwICCAAw
DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEEJIeIb81Zqm2Y1j5ZXPAKS4EgZBf
TX/ntYRmlXh5hTDdfGejJrqPSYvz3LOHzYoQ0pS/wyP+bL9ozMn8aYHrhWvUjHRG
dKYfabd1YWaXBmZYBENuXQ1m14BcD2cgMAMd3tXZJ7j5pZMy7ZOGvNp9h4rjLKQi
lUD6dhvc3Vc4zzd2jagUNklKoufoTe+NhY9SETIHEQ+e62wXsAONnujJUE2q+cc=
-----END ENCRYPTED PRIVATE KEY-----
`

func TestEncryptedKeyRefused(t *testing.T) {
	p := newPKI(t)
	legacy := pem.EncodeToMemory(&pem.Block{
		Type:    "EC PRIVATE KEY",
		Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00112233445566778899AABBCCDDEEFF"},
		Bytes:   bytes.Repeat([]byte{0x5a}, 128),
	})
	for name, key := range map[string][]byte{"PKCS #8": []byte(encryptedKey), "legacy PEM": legacy} {
		t.Run(name, func(t *testing.T) {
			file := testutil.WriteKeystore(t, p.dir, "encrypted.pem", p.certPEM, key)
			for _, s := range []TLSSettings{
				{KeystoreLocation: file, KeyPassword: "secret"},
				{KeystoreKey: string(key), KeystoreCertChain: string(p.certPEM), KeyPassword: "secret"},
			} {
				_, err := NewServerTLS(s, nil)
				if !errors.Is(err, ErrEncryptedKey) || !errors.Is(err, ErrTLSSettings) {
					t.Fatalf("error %v, want ErrEncryptedKey", err)
				}
				for _, want := range []string{"encrypted", "ssl.key.password", "ssl.keystore"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
			}
		})
	}
}

func TestKeystoreAnyOrder(t *testing.T) {
	p := newPKI(t)
	// The CA's certificate first, then the key, then the server's
	// certificate: the certificate of the key goes first in the chain.
	data := append(append(p.ca.CertPEM(), p.keyPEM...), p.certPEM...)
	path := filepath.Join(p.dir, "mixed.pem")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := loadKeystore(TLSSettings{KeystoreLocation: path})
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.Certificate) != 2 || !bytes.Equal(cert.Certificate[0], der(t, p.certPEM)) || !bytes.Equal(cert.Certificate[1], p.ca.Cert.Raw) {
		t.Error("chain is not the key's certificate followed by the CA's")
	}
	if cert.Leaf == nil || cert.Leaf.Subject.CommonName != serverSubject.CommonName {
		t.Errorf("leaf = %v, want the server's certificate", cert.Leaf)
	}
}

func TestSettingsErrors(t *testing.T) {
	p := newPKI(t)
	otherCert, _ := p.ca.Issue(t, serverSubject, true)
	write := func(name string, parts ...[]byte) string {
		path := filepath.Join(p.dir, name)
		if err := os.WriteFile(path, bytes.Join(parts, nil), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	missing := filepath.Join(p.dir, "missing.pem")
	tests := []struct {
		name string
		s    TLSSettings
		want []string // in the error
	}{
		{"no keystore", TLSSettings{}, []string{"ssl.keystore.location"}},
		{"missing keystore file", TLSSettings{KeystoreLocation: missing}, []string{"ssl.keystore.location", missing}},
		{"missing truststore file", TLSSettings{KeystoreLocation: p.keystore, TruststoreLocation: missing}, []string{"ssl.truststore.location", missing}},
		{"file and inline keystore", TLSSettings{KeystoreLocation: p.keystore, KeystoreKey: string(p.keyPEM)}, []string{"not both"}},
		{"file and inline truststore", TLSSettings{KeystoreLocation: p.keystore, TruststoreLocation: p.truststore, TruststoreCerts: string(p.ca.CertPEM())}, []string{"not both"}},
		{"key without chain", TLSSettings{KeystoreKey: string(p.keyPEM)}, []string{"ssl.keystore.certificate.chain"}},
		{"chain without key", TLSSettings{KeystoreCertChain: string(p.certPEM)}, []string{"ssl.keystore.key"}},
		{"no key in keystore", TLSSettings{KeystoreLocation: write("nokey.pem", p.certPEM)}, []string{"no private key"}},
		{"no certificate in keystore", TLSSettings{KeystoreLocation: write("nocert.pem", p.keyPEM)}, []string{"no certificate"}},
		{"two keys", TLSSettings{KeystoreLocation: write("twokeys.pem", p.keyPEM, p.keyPEM, p.certPEM)}, []string{"more than one private key"}},
		{"key of another certificate", TLSSettings{KeystoreLocation: write("mismatch.pem", p.keyPEM, otherCert)}, []string{"does not match"}},
		{"not PEM", TLSSettings{KeystoreLocation: write("garbage.pem", []byte("not a keystore"))}, []string{"no PEM data"}},
		{"empty truststore", TLSSettings{KeystoreLocation: p.keystore, TruststoreLocation: write("notrust.pem", p.keyPEM)}, []string{"ssl.truststore.location", "no certificate"}},
		{"bad client auth", TLSSettings{KeystoreLocation: p.keystore, ClientAuth: "sometimes"}, []string{"ssl.client.auth"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewServerTLS(tt.s, nil)
			if !errors.Is(err, ErrTLSSettings) {
				t.Fatalf("error %v, want ErrTLSSettings", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// A client keystore file that changes is reloaded for later handshakes
// (at most once a second), so a broker's renewed certificate reaches its
// inter-broker connections without a restart; one that does not load
// keeps the previous certificate.
func TestClientKeystoreReload(t *testing.T) {
	p := newPKI(t)
	srv := mustServer(t, TLSSettings{KeystoreLocation: p.keystore, TruststoreLocation: p.truststore, ClientAuth: "required"})
	ks := p.clientKeystore(t, "client.pem", pkix.Name{CommonName: "first"})
	clock := newFakeClock()
	client, err := clientConfig(TLSSettings{KeystoreLocation: ks, TruststoreLocation: p.truststore}, "localhost", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	clientCN := func() string {
		t.Helper()
		r := handshake(t, srv.Config(), client)
		if !r.ok() || len(r.server.PeerCertificates) == 0 {
			t.Fatalf("handshake: server %v, client %v", r.serverErr, r.clientErr)
		}
		return r.server.PeerCertificates[0].Subject.CommonName
	}
	if cn := clientCN(); cn != "first" {
		t.Fatalf("client certificate %q, want first", cn)
	}
	certPEM, keyPEM := p.ca.Issue(t, pkix.Name{CommonName: "renewed"}, false)
	rewrite(t, ks, append(append([]byte(nil), keyPEM...), certPEM...))
	if cn := clientCN(); cn != "first" {
		t.Errorf("the file was looked at again within a second: %q", cn)
	}
	clock.Advance(time.Second)
	if cn := clientCN(); cn != "renewed" {
		t.Fatalf("after the keystore changed, the client sent %q, want renewed", cn)
	}
	rewrite(t, ks, []byte("half a file"))
	clock.Advance(time.Second)
	if cn := clientCN(); cn != "renewed" {
		t.Fatalf("after a bad keystore, the client sent %q, want the previous renewed", cn)
	}
}
