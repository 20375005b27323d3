package coord

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TLS to etcd (issue 12). TLS is on exactly when the URLs are https://:
// an embedded member then serves its client and peer URLs with the
// keystore's certificate and requires a certificate of the truststore from
// every client and peer (EmbeddedConfig), and a Client dials with the
// *tls.Config given by WithTLS. Mixing http and https URLs, https without
// TLS material and TLS material with http URLs are ErrInvalid, so a typo
// cannot leave etcd in plaintext while the operator believes otherwise.

// tlsDirName is the directory, inside the member's data dir, that holds the
// keystore split into the two files etcd wants (memberTLSInfo).
const tlsDirName = "samsa-tls"

// embeddedTLS reports whether the member's URLs are https, and checks that
// they all agree and that the TLS files are given exactly then.
func embeddedTLS(cfg EmbeddedConfig, clientURL, peerURL *url.URL) (bool, error) {
	urls := []string{clientURL.String(), peerURL.String()}
	if cfg.InitialCluster != "" {
		for _, m := range strings.Split(cfg.InitialCluster, ",") {
			_, u, ok := strings.Cut(m, "=")
			if !ok {
				return false, fmt.Errorf("%w: etcd initial cluster member %q (want name=peerURL)", ErrInvalid, m)
			}
			urls = append(urls, strings.TrimSpace(u))
		}
	}
	secure, err := urlsSecure(urls)
	if err != nil {
		return false, err
	}
	hasFiles := cfg.KeystoreFile != "" || cfg.TruststoreFile != ""
	switch {
	case secure && (cfg.KeystoreFile == "" || cfg.TruststoreFile == ""):
		return false, fmt.Errorf("%w: embedded etcd with https URLs needs a keystore and a truststore", ErrInvalid)
	case !secure && hasFiles:
		return false, fmt.Errorf("%w: embedded etcd has TLS files but http URLs (use https:// URLs)", ErrInvalid)
	}
	return secure, nil
}

// urlsSecure reports whether the URLs are all https (true) or all http or
// without scheme (false); a mix is ErrInvalid.
func urlsSecure(urls []string) (bool, error) {
	var secure, plain []string
	for _, u := range urls {
		if strings.HasPrefix(strings.ToLower(u), "https://") {
			secure = append(secure, u)
		} else {
			plain = append(plain, u)
		}
	}
	if len(secure) > 0 && len(plain) > 0 {
		return false, fmt.Errorf("%w: etcd URLs mix https (%s) and http (%s): use https:// for all or none", ErrInvalid, strings.Join(secure, ","), strings.Join(plain, ","))
	}
	return len(secure) > 0, nil
}

// memberTLSInfo builds the member's TLS settings for both its client and
// its peer URLs. etcd wants the certificate chain and the key in two files
// (and re-reads them at every handshake), so the keystore is split into
// <Dir>/samsa-tls/member.crt and member.key, mode 0600, at every start.
func memberTLSInfo(cfg EmbeddedConfig) (transport.TLSInfo, error) {
	certPEM, keyPEM, err := splitKeystore(cfg.KeystoreFile)
	if err != nil {
		return transport.TLSInfo{}, fmt.Errorf("%w: etcd keystore %s: %w", ErrInvalid, cfg.KeystoreFile, err)
	}
	if _, err := os.Stat(cfg.TruststoreFile); err != nil {
		return transport.TLSInfo{}, fmt.Errorf("%w: etcd truststore: %w", ErrInvalid, err)
	}
	dir := filepath.Join(cfg.Dir, tlsDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return transport.TLSInfo{}, fmt.Errorf("coord: etcd TLS files: %w", err)
	}
	certFile, keyFile := filepath.Join(dir, "member.crt"), filepath.Join(dir, "member.key")
	if err := writePrivate(certFile, certPEM); err != nil {
		return transport.TLSInfo{}, err
	}
	if err := writePrivate(keyFile, keyPEM); err != nil {
		return transport.TLSInfo{}, err
	}
	return transport.TLSInfo{
		CertFile:       certFile,
		KeyFile:        keyFile,
		TrustedCAFile:  cfg.TruststoreFile,
		ClientCertAuth: true,
	}, nil
}

// splitKeystore reads a PEM keystore holding one private key and its
// certificate chain, in any order, and returns the chain with the key's
// certificate first, and the key.
func splitKeystore(path string) (certPEM, keyPEM []byte, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var keys, certs []*pem.Block
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE":
			certs = append(certs, b)
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			keys = append(keys, b)
		}
	}
	if len(keys) != 1 {
		return nil, nil, fmt.Errorf("want one private key (a PEM block PRIVATE KEY), found %d", len(keys))
	}
	if len(certs) == 0 {
		return nil, nil, fmt.Errorf("no certificate (a PEM block CERTIFICATE)")
	}
	keyPEM = pem.EncodeToMemory(keys[0])
	leaf := -1
	for i, c := range certs {
		if _, err := tls.X509KeyPair(pem.EncodeToMemory(c), keyPEM); err == nil {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return nil, nil, fmt.Errorf("the private key matches none of the certificates, or is encrypted (not supported)")
	}
	certPEM = pem.EncodeToMemory(certs[leaf])
	for i, c := range certs {
		if i != leaf {
			certPEM = append(certPEM, pem.EncodeToMemory(c)...)
		}
	}
	return certPEM, keyPEM, nil
}

// writePrivate replaces the file at path with data, readable by the owner
// only; a reader never sees it half written.
func writePrivate(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*") // mode 0600
	if err != nil {
		return fmt.Errorf("coord: etcd TLS files: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("coord: etcd TLS files: %w", err)
	}
	return nil
}

// checkEndpointsTLS refuses endpoints whose scheme does not match the
// client's TLS setting: https endpoints need WithTLS, and WithTLS needs
// https endpoints (an endpoint without scheme follows the setting).
func checkEndpointsTLS(endpoints []string, tlsConfig *tls.Config) error {
	for _, ep := range endpoints {
		lower := strings.ToLower(ep)
		switch {
		case strings.HasPrefix(lower, "https://") && tlsConfig == nil:
			return fmt.Errorf("%w: etcd endpoint %s is https but no TLS configuration is given", ErrInvalid, ep)
		case strings.HasPrefix(lower, "http://") && tlsConfig != nil:
			return fmt.Errorf("%w: etcd endpoint %s is http but TLS is configured (use https://)", ErrInvalid, ep)
		}
	}
	return nil
}
