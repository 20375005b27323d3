package auth

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// ErrTLSSettings is wrapped by every error about TLS settings: a bad value,
// or key, certificate or truststore material that does not load.
var ErrTLSSettings = errors.New("auth: bad TLS settings")

// ErrEncryptedKey is wrapped (with ErrTLSSettings) when the private key is
// encrypted: Go's standard library cannot decrypt PKCS #8 or legacy
// encrypted PEM keys, so ssl.key.password cannot be honoured.
var ErrEncryptedKey = errors.New("auth: encrypted private keys are not supported")

// TLSSettings are Kafka's ssl.* settings of one listener (server side) or of
// a client (the broker's inter-broker connections, the CLI). Only PEM
// material is supported; the *Location fields are file paths, the inline
// fields hold PEM text, as Kafka's ssl.keystore.key,
// ssl.keystore.certificate.chain and ssl.truststore.certificates do.
type TLSSettings struct {
	// KeystoreType is ssl.keystore.type: "PEM" or empty. JKS and PKCS12
	// are refused with a message saying to convert the keystore to PEM.
	KeystoreType string
	// KeystoreLocation is ssl.keystore.location: one file holding the
	// private key and its certificate chain, PEM, in any order.
	KeystoreLocation string
	// KeystoreKey is ssl.keystore.key: the private key, PEM, inline.
	KeystoreKey string
	// KeystoreCertChain is ssl.keystore.certificate.chain: the certificate
	// chain, PEM, inline, the key's certificate first.
	KeystoreCertChain string
	// KeyPassword is ssl.key.password. Encrypted keys are refused
	// (ErrEncryptedKey); with a key that is not encrypted it is ignored.
	KeyPassword string

	// TruststoreType is ssl.truststore.type: "PEM" or empty.
	TruststoreType string
	// TruststoreLocation is ssl.truststore.location: a file of CA
	// certificates, PEM.
	TruststoreLocation string
	// TruststoreCerts is ssl.truststore.certificates: CA certificates,
	// PEM, inline.
	TruststoreCerts string

	// ClientAuth is ssl.client.auth (server side): "none" (or empty),
	// "requested" or "required".
	ClientAuth string
	// EnabledProtocols is ssl.enabled.protocols: "TLSv1.2", "TLSv1.3";
	// empty means both. TLSv1 and TLSv1.1 are refused.
	EnabledProtocols []string
	// CipherSuites is ssl.cipher.suites, by Go's (IANA) names; empty means
	// Go's defaults. Go does not let TLS 1.3 suites be chosen: TLS 1.3
	// names are accepted and have no effect.
	CipherSuites []string
	// EndpointIdentification is ssl.endpoint.identification.algorithm
	// (client side): "https" checks the server's certificate names the
	// host; empty checks the chain only.
	EndpointIdentification string
}

// reloadCheckInterval is how often, at most, a handshake looks at whether
// the keystore or truststore files changed.
const reloadCheckInterval = time.Second

// ServerTLS is the TLS configuration of one listener. Its key, certificate
// chain and truststore come from files or inline PEM; files are re-read
// when they change, so renewed certificates apply to new connections
// without a restart. The handshake path does the checking (at most once per
// reloadCheckInterval), so there is no goroutine to stop.
//
// ServerTLS is safe for concurrent use: handshakes run on many goroutines.
type ServerTLS struct {
	settings TLSSettings
	// onReloadError is told about a change of the files that did not load
	// (nil: nobody is told). The previous material stays in use.
	onReloadError func(error)
	// now is the clock for the reload check; tests replace it.
	now func() time.Time
	// config is what Config returns; it hands out the current material's
	// configuration through GetConfigForClient.
	config *tls.Config

	mu sync.Mutex
	// cur is the configuration of the key, chain and truststore in use;
	// never modified, replaced whole by a reload.
	cur *tls.Config
	// lastCheck is when the files were last looked at.
	lastCheck time.Time
	// seen are the files as they were when last loaded or tried, in the
	// order of files(): a file that still looks so is not re-read, not even
	// after it failed to load.
	seen []fileStamp
}

// NewServerTLS loads the listener's key, certificate chain and truststore
// now, checking the settings; an error names the setting and the file.
// onReloadError, if not nil, is called (on a handshake's goroutine) when a
// change of the files does not load; the previous material stays in use and
// the next change is tried again.
func NewServerTLS(s TLSSettings, onReloadError func(error)) (*ServerTLS, error) {
	return newServerTLS(s, onReloadError, time.Now)
}

func newServerTLS(s TLSSettings, onReloadError func(error), now func() time.Time) (*ServerTLS, error) {
	if !hasKeystore(s) {
		return nil, fmt.Errorf("%w: a listener needs a key and certificate: set ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain", ErrTLSSettings)
	}
	t := &ServerTLS{settings: s, onReloadError: onReloadError, now: now}
	seen := t.stampFiles()
	m, err := t.load()
	if err != nil {
		return nil, err
	}
	t.cur, t.seen, t.lastCheck = m, seen, now()
	t.config = m.Clone()
	t.config.GetConfigForClient = t.configForClient
	return t, nil
}

// Config is the configuration for tls.Server (or tls.NewListener). Every
// handshake gets the current material's configuration through
// GetConfigForClient, so changing fields of the returned value has no
// effect on handshakes.
func (t *ServerTLS) Config() *tls.Config { return t.config }

// configForClient is the GetConfigForClient hook: it looks for changed
// files (at most once per reloadCheckInterval) and returns the
// configuration of the current key, chain and truststore.
func (t *ServerTLS) configForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	c, err := t.maybeReload()
	if err != nil && t.onReloadError != nil {
		t.onReloadError(err)
	}
	return c, nil
}

// maybeReload reloads the key, chain and truststore if a file changed since
// it was last looked at, and returns the configuration to use and the error
// of a reload that failed.
func (t *ServerTLS) maybeReload() (*tls.Config, error) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.seen) == 0 {
		return t.cur, nil // inline PEM only: nothing can change
	}
	// A clock that went back counts as time passed.
	if d := now.Sub(t.lastCheck); d >= 0 && d < reloadCheckInterval {
		return t.cur, nil
	}
	t.lastCheck = now
	// The files are stamped before they are read: a change during the read
	// is seen at the next check and read again.
	stamps := t.stampFiles()
	changed := false
	for i := range stamps {
		if !stamps[i].same(t.seen[i]) {
			changed = true
		}
	}
	if !changed {
		return t.cur, nil
	}
	t.seen = stamps
	m, err := t.load()
	if err != nil {
		return t.cur, fmt.Errorf("auth: TLS reload failed, keeping the previous key and certificates: %w", err)
	}
	t.cur = m
	return m, nil
}

// files are the files the material comes from.
func (t *ServerTLS) files() []string {
	var files []string
	for _, f := range []string{t.settings.KeystoreLocation, t.settings.TruststoreLocation} {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

func (t *ServerTLS) stampFiles() []fileStamp {
	files := t.files()
	stamps := make([]fileStamp, len(files))
	for i, f := range files {
		stamps[i] = stampFile(f)
	}
	return stamps
}

// load reads and checks the key, chain and truststore and builds the
// handshake configuration from them.
func (t *ServerTLS) load() (*tls.Config, error) {
	s := t.settings
	clientAuth, err := parseClientAuth(s.ClientAuth)
	if err != nil {
		return nil, err
	}
	minV, maxV, err := parseProtocols(s.EnabledProtocols)
	if err != nil {
		return nil, err
	}
	suites, err := parseCipherSuites(s.CipherSuites)
	if err != nil {
		return nil, err
	}
	cert, err := loadKeystore(s)
	if err != nil {
		return nil, err
	}
	roots, err := loadTruststore(s)
	if err != nil {
		return nil, err
	}
	if clientAuth != tls.NoClientCert && roots == nil {
		// Without a truststore Go would verify client certificates against
		// the system's CAs: any certificate from a public CA would then name
		// a principal.
		return nil, fmt.Errorf("%w: ssl.client.auth=%s needs a truststore (ssl.truststore.location or ssl.truststore.certificates) to verify client certificates with", ErrTLSSettings, s.ClientAuth)
	}
	c := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
		ClientAuth:   clientAuth,
	}
	if clientAuth != tls.NoClientCert {
		// Go checks the chains of a resumed session against these too: a
		// session ticket from before a reload does not outlive a CA that
		// the reload removed.
		c.ClientCAs = roots
	}
	return c, nil
}

// ClientConfig builds the configuration of a TLS client that connects to
// serverName (a host, or host:port; empty if the caller sets ServerName
// itself, as franz-go's dialer does for each broker): RootCAs from the truststore (the
// system's CAs without one), the keystore's key and chain as client
// certificate if a keystore is set. With EndpointIdentification "https"
// (the default in Kafka) the server's certificate must name serverName;
// with EndpointIdentification empty the chain is still verified but any
// name is accepted. A keystore file is looked at again, at most once a
// second, when a server asks for the client's certificate, and reloaded if
// it changed (the previous certificate stays if it does not load), so a
// broker's renewed certificate reaches its inter-broker connections
// without a restart; the truststore is read once.
func ClientConfig(s TLSSettings, serverName string) (*tls.Config, error) {
	return clientConfig(s, serverName, time.Now)
}

func clientConfig(s TLSSettings, serverName string, now func() time.Time) (*tls.Config, error) {
	minV, maxV, err := parseProtocols(s.EnabledProtocols)
	if err != nil {
		return nil, err
	}
	suites, err := parseCipherSuites(s.CipherSuites)
	if err != nil {
		return nil, err
	}
	roots, err := loadTruststore(s)
	if err != nil {
		return nil, err
	}
	if host, _, err := net.SplitHostPort(serverName); err == nil {
		serverName = host
	}
	c := &tls.Config{
		RootCAs:      roots,
		ServerName:   serverName,
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
	}
	if hasKeystore(s) {
		stamp := stampFile(s.KeystoreLocation)
		cert, err := loadKeystore(s)
		if err != nil {
			return nil, err
		}
		if s.KeystoreLocation == "" {
			c.Certificates = []tls.Certificate{cert}
		} else {
			k := &clientKeystore{settings: s, now: now, cur: cert, seen: stamp, lastCheck: now()}
			c.GetClientCertificate = k.get
		}
	}
	switch {
	case strings.EqualFold(s.EndpointIdentification, "https"):
	case s.EndpointIdentification == "":
		// Go verifies the host name whenever it verifies the chain, so the
		// chain is verified here instead, without a name. ServerName still
		// goes out as SNI.
		c.InsecureSkipVerify = true
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyServerChain(cs.PeerCertificates, roots)
		}
	default:
		return nil, fmt.Errorf("%w: ssl.endpoint.identification.algorithm %q: want https or empty", ErrTLSSettings, s.EndpointIdentification)
	}
	return c, nil
}

// clientKeystore is a client's certificate from a keystore file, reloaded
// when the file changes.
type clientKeystore struct {
	settings TLSSettings
	now      func() time.Time

	mu sync.Mutex
	// cur is the certificate in use; lastCheck when the file was last
	// looked at, seen the file as it was then.
	cur       tls.Certificate
	lastCheck time.Time
	seen      fileStamp
}

// get is the GetClientCertificate hook. It sends the certificate only if
// the server can accept it, as Go does with Certificates.
func (k *clientKeystore) get(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	now := k.now()
	if d := now.Sub(k.lastCheck); d < 0 || d >= reloadCheckInterval {
		k.lastCheck = now
		if stamp := stampFile(k.settings.KeystoreLocation); !stamp.same(k.seen) {
			k.seen = stamp
			if cert, err := loadKeystore(k.settings); err == nil {
				k.cur = cert
			}
		}
	}
	cert := k.cur
	k.mu.Unlock()
	if cri.SupportsCertificate(&cert) != nil {
		return &tls.Certificate{}, nil
	}
	return &cert, nil
}

// verifyServerChain verifies a server's chain (leaf first) up to roots (the
// system's CAs if nil), whatever names it has.
func verifyServerChain(chain []*x509.Certificate, roots *x509.CertPool) error {
	if len(chain) == 0 {
		return errors.New("auth: server sent no certificate")
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func hasKeystore(s TLSSettings) bool {
	return s.KeystoreLocation != "" || s.KeystoreKey != "" || s.KeystoreCertChain != ""
}

// checkStoreType refuses store types other than PEM.
func checkStoreType(setting, typ string) error {
	if typ == "" || strings.EqualFold(typ, "PEM") {
		return nil
	}
	return fmt.Errorf("%w: %s %s is not supported, only PEM: convert the store to PEM files (for example keytool -importkeystore to PKCS12, then openssl pkcs12 -nodes) and set %s=PEM", ErrTLSSettings, setting, typ, setting)
}

// loadKeystore reads the private key and certificate chain from the
// keystore file or the inline settings. The certificate whose public key
// matches the private key goes first, the others follow in their order.
func loadKeystore(s TLSSettings) (tls.Certificate, error) {
	if err := checkStoreType("ssl.keystore.type", s.KeystoreType); err != nil {
		return tls.Certificate{}, err
	}
	var (
		where           string // the setting and file, for errors
		keyPEM, certPEM []byte
	)
	switch {
	case s.KeystoreLocation != "" && (s.KeystoreKey != "" || s.KeystoreCertChain != ""):
		return tls.Certificate{}, fmt.Errorf("%w: set ssl.keystore.location or ssl.keystore.key with ssl.keystore.certificate.chain, not both", ErrTLSSettings)
	case s.KeystoreLocation != "":
		where = fmt.Sprintf("ssl.keystore.location %s", s.KeystoreLocation)
		data, err := os.ReadFile(s.KeystoreLocation)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("%w: %s: %w", ErrTLSSettings, where, err)
		}
		keyPEM, certPEM = data, data
	case s.KeystoreKey == "":
		return tls.Certificate{}, fmt.Errorf("%w: ssl.keystore.certificate.chain is set but ssl.keystore.key is not", ErrTLSSettings)
	case s.KeystoreCertChain == "":
		return tls.Certificate{}, fmt.Errorf("%w: ssl.keystore.key is set but ssl.keystore.certificate.chain is not", ErrTLSSettings)
	default:
		where = "ssl.keystore.key and ssl.keystore.certificate.chain"
		keyPEM, certPEM = []byte(s.KeystoreKey), []byte(s.KeystoreCertChain)
	}
	cert, err := parseKeystore(keyPEM, certPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s: %w", ErrTLSSettings, where, err)
	}
	return cert, nil
}

// parseKeystore finds the one private key in keyPEM and the certificates in
// certPEM (which may be the same text).
func parseKeystore(keyPEM, certPEM []byte) (tls.Certificate, error) {
	keyBlocks, err := pemBlocks(keyPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	var keyBlock *pem.Block
	for _, b := range keyBlocks {
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		if keyBlock != nil {
			return tls.Certificate{}, errors.New("more than one private key")
		}
		keyBlock = b
	}
	if keyBlock == nil {
		return tls.Certificate{}, errors.New("no private key (a PEM block PRIVATE KEY)")
	}
	if keyBlock.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(keyBlock.Headers["Proc-Type"], "ENCRYPTED") {
		return tls.Certificate{}, fmt.Errorf("%w (Go's standard library cannot decrypt them, so ssl.key.password cannot be used): decrypt the key, for example with openssl pkcs8 -topk8 -nocrypt -in key.pem -out key-plain.pem, and keep the file readable only by the broker", ErrEncryptedKey)
	}
	key, err := parsePrivateKey(keyBlock)
	if err != nil {
		return tls.Certificate{}, err
	}

	certBlocks, err := pemBlocks(certPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	var (
		ders [][]byte
		leaf *x509.Certificate
	)
	pub := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	for _, b := range certBlocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("certificate %d: %w", len(ders)+1, err)
		}
		if leaf == nil && pub.Equal(c.PublicKey) {
			leaf = c
			ders = append([][]byte{b.Bytes}, ders...)
			continue
		}
		ders = append(ders, b.Bytes)
	}
	if len(ders) == 0 {
		return tls.Certificate{}, errors.New("no certificate (a PEM block CERTIFICATE)")
	}
	if leaf == nil {
		return tls.Certificate{}, errors.New("the private key does not match any of the certificates")
	}
	return tls.Certificate{Certificate: ders, PrivateKey: key, Leaf: leaf}, nil
}

// parsePrivateKey parses a PKCS #8, PKCS #1 (RSA) or SEC 1 (EC) key.
func parsePrivateKey(b *pem.Block) (crypto.Signer, error) {
	var (
		key any
		err error
	)
	switch b.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		return nil, fmt.Errorf("unsupported private key type %q (want PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)", b.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	if _, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok {
		return nil, fmt.Errorf("private key of type %T is not supported", key)
	}
	return signer, nil
}

// loadTruststore reads the CA certificates from the truststore file or the
// inline setting; nil if neither is set.
func loadTruststore(s TLSSettings) (*x509.CertPool, error) {
	if err := checkStoreType("ssl.truststore.type", s.TruststoreType); err != nil {
		return nil, err
	}
	var (
		where string
		data  []byte
	)
	switch {
	case s.TruststoreLocation != "" && s.TruststoreCerts != "":
		return nil, fmt.Errorf("%w: set ssl.truststore.location or ssl.truststore.certificates, not both", ErrTLSSettings)
	case s.TruststoreLocation != "":
		where = fmt.Sprintf("ssl.truststore.location %s", s.TruststoreLocation)
		var err error
		if data, err = os.ReadFile(s.TruststoreLocation); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrTLSSettings, where, err)
		}
	case s.TruststoreCerts != "":
		where = "ssl.truststore.certificates"
		data = []byte(s.TruststoreCerts)
	default:
		return nil, nil
	}
	blocks, err := pemBlocks(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTLSSettings, where, err)
	}
	pool := x509.NewCertPool()
	n := 0
	for _, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: certificate %d: %w", ErrTLSSettings, where, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %s: no certificate (a PEM block CERTIFICATE)", ErrTLSSettings, where)
	}
	return pool, nil
}

// pemBlocks decodes all PEM blocks of data. A block that begins but does
// not end (a file caught half-written) is an error, not skipped.
func pemBlocks(data []byte) ([]*pem.Block, error) {
	var blocks []*pem.Block
	rest := data
	for {
		b, r := pem.Decode(rest)
		if b == nil {
			break
		}
		blocks = append(blocks, b)
		rest = r
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		return nil, errors.New("a PEM block is cut short (file partly written?)")
	}
	if len(blocks) == 0 {
		return nil, errors.New("no PEM data")
	}
	return blocks, nil
}

// parseClientAuth maps ssl.client.auth to Go's client authentication.
func parseClientAuth(s string) (tls.ClientAuthType, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("%w: ssl.client.auth %q: want none, requested or required", ErrTLSSettings, s)
}

// parseProtocols maps ssl.enabled.protocols to Go's minimum and maximum
// version. TLS 1.2 is the minimum; with only two versions left the enabled
// set is always a range.
func parseProtocols(protocols []string) (minV, maxV uint16, err error) {
	if len(protocols) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, p := range protocols {
		var v uint16
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "tlsv1.2":
			v = tls.VersionTLS12
		case "tlsv1.3":
			v = tls.VersionTLS13
		case "tlsv1", "tlsv1.0", "tlsv1.1", "sslv3", "sslv2hello":
			return 0, 0, fmt.Errorf("%w: ssl.enabled.protocols: %s is not allowed, the minimum is TLSv1.2", ErrTLSSettings, p)
		default:
			return 0, 0, fmt.Errorf("%w: ssl.enabled.protocols: unknown protocol %q (want TLSv1.2, TLSv1.3)", ErrTLSSettings, p)
		}
		if minV == 0 || v < minV {
			minV = v
		}
		if v > maxV {
			maxV = v
		}
	}
	return minV, maxV, nil
}

// parseCipherSuites maps ssl.cipher.suites (Go's names, which are the IANA
// names Java uses too) to IDs. Suites Go considers insecure are refused.
func parseCipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byName := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs.ID
	}
	insecure := map[string]bool{}
	for _, cs := range tls.InsecureCipherSuites() {
		insecure[cs.Name] = true
	}
	ids := make([]uint16, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		id, ok := byName[n]
		switch {
		case ok:
			ids = append(ids, id)
		case insecure[n]:
			return nil, fmt.Errorf("%w: ssl.cipher.suites: %s is insecure", ErrTLSSettings, n)
		default:
			return nil, fmt.Errorf("%w: ssl.cipher.suites: unknown cipher suite %q", ErrTLSSettings, n)
		}
	}
	return ids, nil
}

// fileStamp is what a reload check compares: a file whose stamp is the same
// is taken as unchanged.
type fileStamp struct {
	info os.FileInfo // nil if the file could not be stat'ed
}

func stampFile(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{info: info}
}

// same reports whether the file has the same modification time, size and
// identity (device and inode on Unix: a file renamed over it is a change).
func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return a.info.ModTime().Equal(b.info.ModTime()) && a.info.Size() == b.info.Size() && os.SameFile(a.info, b.info)
}
