package broker

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

// Listeners, as Kafka configures them (docs/security.md):
//
//   - listeners: NAME://host:port entries, one per named listener; a bare
//     host:port is a listener named PLAINTEXT. Names are case-insensitive
//     and kept upper case, as Kafka normalises them.
//   - listener.security.protocol.map: NAME:PROTOCOL entries giving each
//     listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT,
//     SASL_SSL). Kafka's default maps each protocol's name to itself.
//   - advertised.listeners: NAME://host:port entries, what clients that
//     connect to that listener are told; a listener without one advertises
//     its bound address (an empty or wildcard host as "localhost").
//   - inter.broker.listener.name, or security.inter.broker.protocol: the
//     listener other brokers connect to (followers' fetches, forwarded
//     requests). Unset, it is the listener named PLAINTEXT, as in Kafka,
//     or else the first listener (Kafka refuses to start instead).

// Security protocols.
const (
	protocolPlaintext     = "PLAINTEXT"
	protocolSSL           = "SSL"
	protocolSASLPlaintext = "SASL_PLAINTEXT"
	protocolSASLSSL       = "SASL_SSL"
)

// defaultSecurityProtocolMap is Kafka's listener.security.protocol.map.
var defaultSecurityProtocolMap = map[string]string{
	protocolPlaintext:     protocolPlaintext,
	protocolSSL:           protocolSSL,
	protocolSASLPlaintext: protocolSASLPlaintext,
	protocolSASLSSL:       protocolSASLSSL,
}

// listenerSpec is one entry of listeners or advertised.listeners.
type listenerSpec struct {
	// Name is the listener's name, upper case.
	Name string
	// Addr is host:port as written (host may be empty, port 0).
	Addr string
}

var listenerNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// parseListener parses "NAME://host:port" or a bare "host:port".
func parseListener(l string) (listenerSpec, error) {
	name, addr, ok := strings.Cut(l, "://")
	if !ok {
		name, addr = protocolPlaintext, l
	}
	if !listenerNameRE.MatchString(name) {
		return listenerSpec{}, fmt.Errorf("%w: listener %q: the name must be letters, digits, '_' or '-'", ErrConfig, l)
	}
	if _, port, err := net.SplitHostPort(addr); err != nil {
		return listenerSpec{}, fmt.Errorf("%w: listener %q: %v", ErrConfig, l, err)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return listenerSpec{}, fmt.Errorf("%w: listener %q: bad port", ErrConfig, l)
	}
	return listenerSpec{Name: strings.ToUpper(name), Addr: addr}, nil
}

// parseListeners parses a listeners or advertised.listeners list; names
// must not repeat.
func parseListeners(setting string, list []string) ([]listenerSpec, error) {
	var out []listenerSpec
	for _, l := range list {
		spec, err := parseListener(l)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o listenerSpec) bool { return o.Name == spec.Name }) {
			return nil, fmt.Errorf("%w: %s names listener %s twice", ErrConfig, setting, spec.Name)
		}
		out = append(out, spec)
	}
	return out, nil
}

// parseSecurityProtocolMap parses listener.security.protocol.map.
func parseSecurityProtocolMap(value string) (map[string]string, error) {
	m := map[string]string{}
	for _, e := range splitList(value) {
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || !listenerNameRE.MatchString(name) {
			return nil, fmt.Errorf("want NAME:PROTOCOL entries, not %q", e)
		}
		if _, known := defaultSecurityProtocolMap[proto]; !known {
			return nil, fmt.Errorf("%s: unknown security protocol %q (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", name, proto)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("listener %s mapped twice", name)
		}
		m[name] = proto
	}
	return m, nil
}

// listenerConfig is the resolved listener settings of a Config.
type listenerConfig struct {
	// listeners are the listeners to bind, in order.
	listeners []listenerSpec
	// protocols is each listener's security protocol.
	protocols map[string]string
	// advertised is what each listener advertises (host may be empty or
	// a wildcard, port 0 until bound).
	advertised map[string]string
	// interBroker is the inter-broker listener's name.
	interBroker string
}

// resolveListeners checks listeners, advertised.listeners, the protocol
// map and the inter-broker listener together.
func (c *Config) resolveListeners() (listenerConfig, error) {
	var lc listenerConfig
	var err error
	if lc.listeners, err = parseListeners("listeners", c.Listeners); err != nil {
		return lc, err
	}
	if len(lc.listeners) == 0 {
		return lc, fmt.Errorf("%w: no listeners", ErrConfig)
	}
	protocols := c.ListenerSecurityProtocolMap
	if protocols == nil {
		protocols = defaultSecurityProtocolMap
	}
	lc.protocols = map[string]string{}
	lc.advertised = map[string]string{}
	for _, l := range lc.listeners {
		p, ok := protocols[l.Name]
		if !ok {
			return lc, fmt.Errorf("%w: listener %s has no security protocol in listener.security.protocol.map", ErrConfig, l.Name)
		}
		lc.protocols[l.Name] = p
		lc.advertised[l.Name] = l.Addr
	}
	adv, err := parseListeners("advertised.listeners", c.AdvertisedListeners)
	if err != nil {
		return lc, err
	}
	for _, a := range adv {
		if _, ok := lc.protocols[a.Name]; !ok {
			return lc, fmt.Errorf("%w: advertised.listeners names %s, which is not in listeners", ErrConfig, a.Name)
		}
		host, port, _ := net.SplitHostPort(a.Addr)
		if port == "0" {
			return lc, fmt.Errorf("%w: advertised listener %s has port 0", ErrConfig, a.Name)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			return lc, fmt.Errorf("%w: advertised listener %s: advertise a host clients can reach, not %q", ErrConfig, a.Name, host)
		}
		lc.advertised[a.Name] = a.Addr
	}
	switch {
	case c.InterBrokerListenerName != "" && c.SecurityInterBrokerProtocol != "":
		return lc, fmt.Errorf("%w: set inter.broker.listener.name or security.inter.broker.protocol, not both", ErrConfig)
	case c.InterBrokerListenerName != "":
		lc.interBroker = strings.ToUpper(c.InterBrokerListenerName)
	case c.SecurityInterBrokerProtocol != "":
		// Kafka: the listener named after the protocol.
		lc.interBroker = strings.ToUpper(c.SecurityInterBrokerProtocol)
	default:
		lc.interBroker = lc.listeners[0].Name
		if _, ok := lc.protocols[protocolPlaintext]; ok {
			lc.interBroker = protocolPlaintext
		}
	}
	if _, ok := lc.protocols[lc.interBroker]; !ok {
		return lc, fmt.Errorf("%w: the inter-broker listener %s is not in listeners", ErrConfig, lc.interBroker)
	}
	return lc, nil
}

// endpoints returns the broker's advertised endpoints, given the bound
// address of each listener (for a port of 0).
func (lc listenerConfig) endpoints(bound map[string]net.Addr) ([]meta.Endpoint, error) {
	var out []meta.Endpoint
	for _, l := range lc.listeners {
		host, port, _ := net.SplitHostPort(lc.advertised[l.Name])
		if port == "0" {
			if a, ok := bound[l.Name]; ok {
				_, port, _ = net.SplitHostPort(a.String())
			}
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		p, err := strconv.Atoi(port)
		if err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("%w: listener %s: advertised port %q", ErrConfig, l.Name, port)
		}
		out = append(out, meta.Endpoint{Listener: l.Name, SecurityProtocol: lc.protocols[l.Name], Host: host, Port: int32(p)})
	}
	return out, nil
}

// endpointFor returns the endpoint of broker br that a client of req's
// listener is told; false when br has no such listener (Kafka leaves it
// out of the answer then). A request without a connection (tests) gets
// the inter-broker listener's.
func endpointFor(br meta.Broker, req *protocol.Request) (meta.Endpoint, bool) {
	if req == nil || req.Conn == nil || req.Conn.Listener == "" {
		return meta.Endpoint{Listener: "", Host: br.Host, Port: br.Port}, true
	}
	return br.Endpoint(req.Conn.Listener)
}
