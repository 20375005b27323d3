package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/auth"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

// TLS and SASL settings (docs/security.md). Each may be set for every
// listener by its Kafka name (ssl.keystore.location) or for one listener
// with the prefix listener.name.<listener>. (lower case), which wins. A
// SASL listener's users come from a JAAS config that names the mechanism,
// listener.name.<listener>.<mechanism>.sasl.jaas.config, as Kafka
// requires of brokers.

// listenerSettings are the settings a listener may override.
var listenerSettings = map[string]bool{
	"ssl.keystore.type":                         true,
	"ssl.keystore.location":                     true,
	"ssl.keystore.password":                     true, // PEM keystores have none; accepted and ignored
	"ssl.keystore.key":                          true,
	"ssl.keystore.certificate.chain":            true,
	"ssl.key.password":                          true,
	"ssl.truststore.type":                       true,
	"ssl.truststore.location":                   true,
	"ssl.truststore.password":                   true, // likewise
	"ssl.truststore.certificates":               true,
	"ssl.client.auth":                           true,
	"ssl.enabled.protocols":                     true,
	"ssl.protocol":                              true, // Go negotiates the highest enabled version; accepted
	"ssl.cipher.suites":                         true,
	"ssl.principal.mapping.rules":               true,
	"ssl.endpoint.identification.algorithm":     true,
	"sasl.enabled.mechanisms":                   true,
	"sasl.server.max.receive.size":              true,
	"connections.max.reauth.ms":                 true,
	"connection.failed.authentication.delay.ms": true,
}

// brokerOnlySettings may not be given per listener.
var brokerOnlySettings = map[string]bool{
	"sasl.mechanism.inter.broker.protocol": true,
}

// supportedMechanisms are the SASL mechanisms samsa serves.
var supportedMechanisms = []string{auth.MechanismPlain, auth.MechanismScramSHA256, auth.MechanismScramSHA512}

// securitySetting recognises a TLS or SASL setting and returns the key it
// is stored under (the listener name in a listener.name. prefix lower
// case); ok is false for other settings.
func securitySetting(key, value string) (norm string, ok bool, err error) {
	if listenerSettings[key] || brokerOnlySettings[key] {
		return key, true, checkSecurityValue(key, value)
	}
	rest, found := strings.CutPrefix(key, "listener.name.")
	if !found {
		if strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.") {
			return "", true, fmt.Errorf("unknown setting")
		}
		return "", false, nil
	}
	name, setting, found := strings.Cut(rest, ".")
	if !found || !listenerNameRE.MatchString(name) {
		return "", true, fmt.Errorf("want listener.name.<listener>.<setting>")
	}
	norm = "listener.name." + strings.ToLower(name) + "." + setting
	if listenerSettings[setting] {
		return norm, true, checkSecurityValue(setting, value)
	}
	if mech, ok := strings.CutSuffix(setting, ".sasl.jaas.config"); ok {
		if !slices.Contains(supportedMechanisms, strings.ToUpper(mech)) {
			return "", true, fmt.Errorf("a JAAS config for mechanism %q, which samsa does not serve (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mech)
		}
		if _, err := auth.ParseJAAS(value); err != nil {
			return "", true, err
		}
		return "listener.name." + strings.ToLower(name) + "." + strings.ToLower(mech) + ".sasl.jaas.config", true, nil
	}
	return "", true, fmt.Errorf("%q cannot be set per listener", setting)
}

// shownValue is what errors and logs may show of a setting's value:
// passwords, private keys and JAAS configs (which hold passwords) are
// "[hidden]", as Kafka shows password settings.
func shownValue(key, value string) string {
	if strings.Contains(key, "password") || strings.HasSuffix(key, "sasl.jaas.config") || strings.HasSuffix(key, "ssl.keystore.key") {
		return "[hidden]"
	}
	return value
}

// checkSecurityValue checks what can be checked of one value alone.
func checkSecurityValue(key, value string) error {
	switch key {
	case "ssl.client.auth":
		if !slices.Contains([]string{"none", "requested", "required"}, value) {
			return fmt.Errorf("want none, requested or required")
		}
	case "ssl.keystore.type", "ssl.truststore.type":
		if value != "" && !strings.EqualFold(value, "PEM") {
			return fmt.Errorf("samsa reads PEM files only: convert the store to PEM (openssl pkcs12 -nodes) and set PEM")
		}
	case "sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol":
		for _, m := range splitList(value) {
			if !slices.Contains(supportedMechanisms, strings.ToUpper(m)) {
				return fmt.Errorf("mechanism %q is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", m)
			}
		}
	case "sasl.server.max.receive.size":
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil || n < 1024 {
			return fmt.Errorf("want at least 1024")
		}
	case "connections.max.reauth.ms", "connection.failed.authentication.delay.ms":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("want a non-negative number of milliseconds")
		}
	case "ssl.principal.mapping.rules":
		if _, err := auth.ParsePrincipalMappingRules(value); err != nil {
			return err
		}
	}
	return nil
}

// securityValue returns a listener's value of a setting: its own, else
// the broker's.
func (c *Config) securityValue(listener, key string) string {
	if v, ok := c.Security["listener.name."+strings.ToLower(listener)+"."+key]; ok {
		return v
	}
	return c.Security[key]
}

// jaas returns the JAAS config of a listener's mechanism, if set.
func (c *Config) jaas(listener, mechanism string) (auth.JAASConfig, bool) {
	v, ok := c.Security["listener.name."+strings.ToLower(listener)+"."+strings.ToLower(mechanism)+".sasl.jaas.config"]
	if !ok {
		return auth.JAASConfig{}, false
	}
	j, err := auth.ParseJAAS(v)
	return j, err == nil
}

// tlsSettings returns a listener's TLS settings.
func (c *Config) tlsSettings(listener string) auth.TLSSettings {
	v := func(k string) string { return c.securityValue(listener, k) }
	s := auth.TLSSettings{
		KeystoreType:           v("ssl.keystore.type"),
		KeystoreLocation:       v("ssl.keystore.location"),
		KeystoreKey:            v("ssl.keystore.key"),
		KeystoreCertChain:      v("ssl.keystore.certificate.chain"),
		KeyPassword:            v("ssl.key.password"),
		TruststoreType:         v("ssl.truststore.type"),
		TruststoreLocation:     v("ssl.truststore.location"),
		TruststoreCerts:        v("ssl.truststore.certificates"),
		ClientAuth:             v("ssl.client.auth"),
		EnabledProtocols:       splitList(v("ssl.enabled.protocols")),
		CipherSuites:           splitList(v("ssl.cipher.suites")),
		EndpointIdentification: "https",
	}
	// Set to empty (no host name check) is not unset: the listener's own
	// value, set or empty, wins over the broker's.
	if e, ok := c.Security["listener.name."+strings.ToLower(listener)+".ssl.endpoint.identification.algorithm"]; ok {
		s.EndpointIdentification = e
	} else if e, ok := c.Security["ssl.endpoint.identification.algorithm"]; ok {
		s.EndpointIdentification = e
	}
	return s
}

// mechanisms returns a SASL listener's enabled mechanisms, upper case.
func (c *Config) mechanisms(listener string) []string {
	var out []string
	for _, m := range splitList(c.securityValue(listener, "sasl.enabled.mechanisms")) {
		out = append(out, strings.ToUpper(m))
	}
	return out
}

// interBrokerMechanism is sasl.mechanism.inter.broker.protocol, or the
// inter-broker listener's first enabled mechanism.
func (c *Config) interBrokerMechanism(lc listenerConfig) string {
	if m := c.Security["sasl.mechanism.inter.broker.protocol"]; m != "" {
		return strings.ToUpper(m)
	}
	if ms := c.mechanisms(lc.interBroker); len(ms) > 0 {
		return ms[0]
	}
	return ""
}

func isSASL(protocol string) bool {
	return protocol == protocolSASLPlaintext || protocol == protocolSASLSSL
}
func isTLS(protocol string) bool { return protocol == protocolSSL || protocol == protocolSASLSSL }

// checkSecurity checks the security settings against the listeners:
// what each listener's protocol needs is there, and nothing names a
// listener that does not exist.
func (c *Config) checkSecurity(lc listenerConfig) error {
	for key := range c.Security {
		rest, ok := strings.CutPrefix(key, "listener.name.")
		if !ok {
			continue
		}
		name, setting, _ := strings.Cut(rest, ".")
		proto, ok := lc.protocols[strings.ToUpper(name)]
		if !ok {
			return fmt.Errorf("%w: %s names listener %s, which is not in listeners", ErrConfig, key, strings.ToUpper(name))
		}
		// A setting the listener's protocol does not use is a slip (in
		// the protocol map, or the listener's name) that would leave the
		// listener without the security it asks for.
		saslSetting := strings.HasPrefix(setting, "sasl.") || strings.HasSuffix(setting, ".sasl.jaas.config") ||
			setting == "connections.max.reauth.ms" || setting == "connection.failed.authentication.delay.ms"
		if saslSetting && !isSASL(proto) {
			return fmt.Errorf("%w: %s is set, but listener %s is %s, without SASL", ErrConfig, key, strings.ToUpper(name), proto)
		}
		if strings.HasPrefix(setting, "ssl.") && !isTLS(proto) {
			return fmt.Errorf("%w: %s is set, but listener %s is %s, without TLS", ErrConfig, key, strings.ToUpper(name), proto)
		}
	}
	for _, l := range lc.listeners {
		proto := lc.protocols[l.Name]
		if isTLS(proto) {
			s := c.tlsSettings(l.Name)
			if s.KeystoreLocation == "" && (s.KeystoreKey == "" || s.KeystoreCertChain == "") {
				return fmt.Errorf("%w: listener %s (%s) needs ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain", ErrConfig, l.Name, proto)
			}
		}
		if !isSASL(proto) {
			continue
		}
		mechs := c.mechanisms(l.Name)
		if len(mechs) == 0 {
			return fmt.Errorf("%w: listener %s (%s) needs sasl.enabled.mechanisms (Kafka's default, GSSAPI, is not served; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 are)", ErrConfig, l.Name, proto)
		}
		if slices.Contains(mechs, auth.MechanismPlain) {
			j, ok := c.jaas(l.Name, auth.MechanismPlain)
			if !ok || len(j.PlainUsers()) == 0 {
				return fmt.Errorf("%w: listener %s enables PLAIN but listener.name.%s.plain.sasl.jaas.config names no user_<name>=\"<password>\"", ErrConfig, l.Name, strings.ToLower(l.Name))
			}
		}
	}
	if proto := lc.protocols[lc.interBroker]; isSASL(proto) {
		mech := c.interBrokerMechanism(lc)
		if !slices.Contains(c.mechanisms(lc.interBroker), mech) {
			return fmt.Errorf("%w: sasl.mechanism.inter.broker.protocol %s is not enabled on the inter-broker listener %s", ErrConfig, mech, lc.interBroker)
		}
		j, ok := c.jaas(lc.interBroker, mech)
		if !ok || j.Username() == "" || j.Password() == "" {
			return fmt.Errorf("%w: the inter-broker listener %s uses %s: listener.name.%s.%s.sasl.jaas.config must give the broker's username and password",
				ErrConfig, lc.interBroker, mech, strings.ToLower(lc.interBroker), strings.ToLower(mech))
		}
	}
	return nil
}

// protocolListener builds the protocol server's view of a listener.
func (b *Broker) protocolListener(lc listenerConfig, name string) (protocol.Listener, error) {
	c := &b.cfg
	proto := lc.protocols[name]
	lis := protocol.Listener{Name: name}
	if isTLS(proto) {
		st, err := auth.NewServerTLS(c.tlsSettings(name), func(err error) {
			b.logger.Error("listener's TLS files changed but do not load; keeping the previous ones", "listener", name, "err", err)
		})
		if err != nil {
			return lis, fmt.Errorf("%w: listener %s: %v", ErrConfig, name, err)
		}
		lis.TLS = st.Config()
		mapper, err := auth.ParsePrincipalMappingRules(c.securityValue(name, "ssl.principal.mapping.rules"))
		if err != nil {
			return lis, fmt.Errorf("%w: listener %s: %v", ErrConfig, name, err)
		}
		lis.TLSPrincipal = func(cert *x509.Certificate) string {
			// Kafka refuses a client whose subject no rule maps.
			user, ok := mapper.Map(auth.SubjectDN(cert))
			if !ok {
				b.logger.Info("TLS client's subject matches no ssl.principal.mapping.rules rule; refused", "listener", lis.Name, "subject", auth.SubjectDN(cert))
				return ""
			}
			return "User:" + user
		}
	}
	if isSASL(proto) {
		srv := &saslServer{mechanisms: c.mechanisms(name), scram: b.scramCredential, fakeKey: b.scramFakeKey}
		if j, ok := c.jaas(name, auth.MechanismPlain); ok {
			srv.plain = j.PlainUsers()
		}
		lis.SASL = srv
		ms := func(key string) time.Duration {
			n, _ := strconv.ParseInt(c.securityValue(name, key), 10, 64)
			return time.Duration(n) * time.Millisecond
		}
		if v := c.securityValue(name, "sasl.server.max.receive.size"); v != "" {
			n, _ := strconv.ParseInt(v, 10, 32)
			lis.MaxSASLReceive = int32(n)
		}
		lis.MaxReauth = ms("connections.max.reauth.ms")
		if v := c.securityValue(name, "connection.failed.authentication.delay.ms"); v != "" {
			if lis.FailedAuthDelay = ms("connection.failed.authentication.delay.ms"); lis.FailedAuthDelay == 0 {
				lis.FailedAuthDelay = -1
			}
		}
	}
	return lis, nil
}

// saslServer is a listener's protocol.SASLServer.
type saslServer struct {
	mechanisms []string
	// plain is the PLAIN users of the listener's JAAS config.
	plain auth.PlainUsers
	scram auth.ScramLookup
	// fakeKey is the cluster's secret for unknown users' fake salts.
	fakeKey []byte
}

func (s *saslServer) Mechanisms() []string { return s.mechanisms }

func (s *saslServer) Start(mechanism string) (protocol.SASLSession, bool) {
	if !slices.Contains(s.mechanisms, mechanism) {
		return nil, false
	}
	if mechanism == auth.MechanismPlain {
		return auth.NewPlainSession(s.plain.Check), true
	}
	session, err := auth.NewScramSessionKeyed(mechanism, s.scram, s.fakeKey)
	if err != nil {
		return nil, false
	}
	return session, true
}

// scramLookupTimeout bounds the etcd read of a credential during a login.
const scramLookupTimeout = 5 * time.Second

// scramCredential reads a user's SCRAM credential from etcd (auth.ScramLookup).
func (b *Broker) scramCredential(ctx context.Context, mechanism, user string) (auth.ScramCredential, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, scramLookupTimeout)
	defer cancel()
	cred, ok, err := b.client.ScramCredential(ctx, mechanism, user)
	if err != nil || !ok {
		return auth.ScramCredential{}, false, err
	}
	return auth.ScramCredential{Mechanism: cred.Mechanism, Salt: cred.Salt, Iterations: cred.Iterations,
		StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}, true, nil
}

// metaScram converts a credential for storage.
func metaScram(c auth.ScramCredential) meta.ScramCredential {
	return meta.ScramCredential{Mechanism: c.Mechanism, Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

// interBrokerSecurity is how this broker connects to other brokers'
// inter-broker listener: TLS if that listener needs it (nil: none), and
// SASL with this broker's own credentials from its JAAS config (nil:
// none).
type interBrokerSecurity struct {
	tls  *tls.Config
	sasl sasl.Mechanism
}

// interBrokerSecurity returns the inter-broker listener's security, as a
// client of it.
func (c *Config) interBrokerSecurity(lc listenerConfig) (interBrokerSecurity, error) {
	proto := lc.protocols[lc.interBroker]
	var sec interBrokerSecurity
	if isTLS(proto) {
		cfg, err := auth.ClientConfig(c.tlsSettings(lc.interBroker), "")
		if err != nil {
			return sec, fmt.Errorf("%w: inter-broker TLS: %v", ErrConfig, err)
		}
		sec.tls = cfg
	}
	if isSASL(proto) {
		mech := c.interBrokerMechanism(lc)
		j, _ := c.jaas(lc.interBroker, mech)
		switch mech {
		case auth.MechanismPlain:
			sec.sasl = plain.Auth{User: j.Username(), Pass: j.Password()}.AsMechanism()
		case auth.MechanismScramSHA256:
			sec.sasl = scram.Auth{User: j.Username(), Pass: j.Password()}.AsSha256Mechanism()
		case auth.MechanismScramSHA512:
			sec.sasl = scram.Auth{User: j.Username(), Pass: j.Password()}.AsSha512Mechanism()
		}
	}
	return sec, nil
}

// kgoOpts are the client options of this security.
func (s interBrokerSecurity) kgoOpts() []kgo.Opt {
	var opts []kgo.Opt
	if s.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(s.tls))
	}
	if s.sasl != nil {
		opts = append(opts, kgo.SASL(s.sasl))
	}
	return opts
}

// interBrokerClient returns opts with the inter-broker listener's TLS
// and SASL options added, for a client of another broker.
func (b *Broker) interBrokerClient(opts ...kgo.Opt) []kgo.Opt {
	return append(opts, b.interBroker.kgoOpts()...)
}

// InitialScram is a SCRAM credential that samsa server --add-scram puts
// in etcd at start if the user has none for the mechanism yet (as
// kafka-storage format --add-scram does before a KRaft cluster's first
// start): how the first admin user, and the brokers' own user when they
// authenticate to each other with SCRAM, come to exist.
type InitialScram struct {
	Mechanism, User, Password string
	Iterations                int
}

// ParseAddScram parses kafka-storage's --add-scram form:
// SCRAM-SHA-256=[name=alice,password=alice-secret] with an optional
// iterations=N; a value may be double-quoted to hold ',' or ']'.
func ParseAddScram(s string) (InitialScram, error) {
	bad := func(why string) (InitialScram, error) {
		// The argument holds a password: not shown.
		return InitialScram{}, fmt.Errorf("--add-scram: %s (want SCRAM-SHA-256=[name=alice,password=secret])", why)
	}
	mech, rest, ok := strings.Cut(s, "=")
	mech = strings.ToUpper(strings.TrimSpace(mech))
	if !ok || (mech != auth.MechanismScramSHA256 && mech != auth.MechanismScramSHA512) {
		return bad("unknown mechanism")
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return bad("the credential must be in [ ]")
	}
	rest = rest[1 : len(rest)-1]
	out := InitialScram{Mechanism: mech, Iterations: auth.ScramDefaultIterations}
	for rest != "" {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			return bad("want key=value pairs")
		}
		var value string
		if strings.HasPrefix(after, `"`) {
			end := strings.Index(after[1:], `"`)
			if end < 0 {
				return bad("unterminated quote")
			}
			value, rest = after[1:1+end], after[2+end:]
			if rest != "" && !strings.HasPrefix(rest, ",") {
				return bad("text after a quoted value")
			}
			rest = strings.TrimPrefix(rest, ",")
		} else {
			value, rest, _ = strings.Cut(after, ",")
		}
		switch strings.TrimSpace(key) {
		case "name":
			out.User = value
		case "password":
			out.Password = value
		case "iterations":
			n, err := strconv.Atoi(value)
			if err != nil || n < auth.ScramMinIterations || n > auth.ScramMaxIterations {
				return bad("iterations must be 4096 to 16384")
			}
			out.Iterations = n
		default:
			return bad(fmt.Sprintf("unknown key %q", key))
		}
	}
	if out.User == "" || out.Password == "" {
		return bad("name and password are required")
	}
	return out, nil
}

// addInitialScram puts the --add-scram credentials that are not in etcd
// yet, and reads the cluster's key for unknown users' fake SCRAM salts.
func (b *Broker) addInitialScram(ctx context.Context) error {
	key, err := b.client.ScramFakeKey(ctx)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.scramFakeKey = key
	for _, s := range b.cfg.InitialScram {
		cred, err := auth.NewScramCredential(s.Mechanism, s.Password, nil, s.Iterations)
		if err != nil {
			return fmt.Errorf("broker: --add-scram for %s: %w", s.User, err)
		}
		added, err := b.client.PutScramCredential(ctx, s.User, metaScram(cred), true)
		if err != nil {
			return fmt.Errorf("broker: --add-scram for %s: %w", s.User, err)
		}
		if added {
			b.logger.Info("added SCRAM credential", "user", s.User, "mechanism", s.Mechanism)
		} else {
			// As kafka-storage format --add-scram: only if absent. Say
			// so, since a changed password given here changes nothing.
			b.logger.Info("SCRAM credential exists; --add-scram leaves it as it is (change it with AlterUserScramCredentials)",
				"user", s.User, "mechanism", s.Mechanism)
		}
	}
	return nil
}
