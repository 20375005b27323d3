package broker

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/samsa-io/samsa/internal/auth"
)

// TLS to etcd (issue 12; docs/security.md, "etcd"). Kafka has no etcd, so
// the settings are samsa's own, under metadata.etcd.ssl.: one keystore
// (key and certificate chain, PEM) that is both the embedded member's
// certificate and the client certificate the broker presents to etcd, and
// one truststore (CAs, PEM) that verifies etcd's certificate and, on an
// embedded member, every client's and peer's. TLS is on exactly when the
// etcd URLs in use are https://; anything in between is a config error at
// start, so that etcd never runs in plaintext by mistake.

// metadataTLS checks the etcd TLS settings against the etcd URLs in use:
// metadata.etcd.endpoints if set, else the embedded member's client, peer
// and initial-cluster URLs. With https URLs it returns the configuration
// of the broker's etcd clients; with http URLs, nil.
func (c *Config) metadataTLS() (*tls.Config, error) {
	var urls, names []string
	if len(c.MetadataEndpoints) > 0 {
		urls, names = c.MetadataEndpoints, []string{"metadata.etcd.endpoints"}
	} else {
		urls = []string{c.MetadataClientURL, c.MetadataPeerURL}
		names = []string{"metadata.etcd.client.url", "metadata.etcd.peer.url"}
		for _, m := range splitList(c.MetadataInitialCluster) {
			_, u, _ := strings.Cut(m, "=")
			urls = append(urls, strings.TrimSpace(u))
		}
		if c.MetadataInitialCluster != "" {
			names = append(names, "metadata.etcd.initial.cluster")
		}
	}
	var secure, plain []string
	for _, u := range urls {
		if strings.HasPrefix(strings.ToLower(u), "https://") {
			secure = append(secure, u)
		} else {
			plain = append(plain, u)
		}
	}
	settings := c.MetadataTLSKeystore != "" || c.MetadataTLSTruststore != ""
	inUse := strings.Join(names, ", ")
	switch {
	case len(secure) > 0 && len(plain) > 0:
		return nil, fmt.Errorf("%w: %s mix https (%s) and http (%s) URLs: etcd TLS is all or nothing", ErrConfig, inUse, strings.Join(secure, ","), strings.Join(plain, ","))
	case len(secure) > 0 && (c.MetadataTLSKeystore == "" || c.MetadataTLSTruststore == ""):
		return nil, fmt.Errorf("%w: %s are https: set metadata.etcd.ssl.keystore.location and metadata.etcd.ssl.truststore.location (etcd TLS authenticates both sides)", ErrConfig, inUse)
	case len(secure) == 0 && settings:
		return nil, fmt.Errorf("%w: metadata.etcd.ssl.* are set but %s are http: use https:// URLs to secure etcd, or remove the settings", ErrConfig, inUse)
	case len(secure) == 0:
		return nil, nil
	}
	identification := "https"
	if c.MetadataTLSSkipHostnameCheck {
		identification = ""
	}
	// No server name: the etcd client checks each endpoint's own host.
	tc, err := auth.ClientConfig(auth.TLSSettings{
		KeystoreLocation:       c.MetadataTLSKeystore,
		TruststoreLocation:     c.MetadataTLSTruststore,
		EndpointIdentification: identification,
	}, "")
	if err != nil {
		return nil, fmt.Errorf("%w: metadata.etcd.ssl.*: %w", ErrConfig, err)
	}
	return tc, nil
}

// metadataEndpointIdentification is the value of
// metadata.etcd.ssl.endpoint.identification.algorithm.
func metadataEndpointIdentification(c Config) string {
	if c.MetadataTLSSkipHostnameCheck {
		return ""
	}
	return "https"
}
