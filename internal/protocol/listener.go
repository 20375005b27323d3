package protocol

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"time"
)

// Listener is the security of one named listener (Kafka's listeners and
// listener.security.protocol.map): whether its connections speak TLS,
// whether they must authenticate with SASL before anything else, and how
// their principal is named. The zero value with a name is PLAINTEXT.
type Listener struct {
	// Name is the listener's name ("PLAINTEXT", "CLIENT", ...), given to
	// the handler in ConnInfo.Listener.
	Name string
	// TLS, when set, makes every connection a TLS server connection
	// (SSL, SASL_SSL). The handshake must finish within
	// TLSHandshakeTimeout, or the connection is closed.
	TLS *tls.Config
	// TLSPrincipal names the principal of a TLS client that presented a
	// certificate (ssl.principal.mapping.rules over its subject); "" for
	// a subject it refuses, which closes the connection. Nil leaves such
	// clients ANONYMOUS. SASL's principal replaces it.
	TLSPrincipal func(cert *x509.Certificate) string
	// SASL, when set, requires SASL authentication (SASL_PLAINTEXT,
	// SASL_SSL): until a client has authenticated it may send only
	// ApiVersions, SaslHandshake and SaslAuthenticate, in frames of at
	// most MaxSASLReceive bytes; anything else closes the connection.
	SASL SASLServer
	// MaxSASLReceive is sasl.server.max.receive.size (default
	// DefaultMaxSASLReceive): the largest frame accepted before and
	// during authentication.
	MaxSASLReceive int32
	// MaxReauth is connections.max.reauth.ms (KIP-368; 0 = none): an
	// authenticated SASL session lasts at most this long; the client
	// must authenticate again on the same connection before then, or the
	// connection is closed at its next request.
	MaxReauth time.Duration
	// FailedAuthDelay is connection.failed.authentication.delay.ms
	// (default DefaultFailedAuthDelay, negative = none): how long a
	// failed authentication's response is held back before the
	// connection closes, which slows down password guessing.
	FailedAuthDelay time.Duration
}

// Defaults of Listener.
const (
	// DefaultMaxSASLReceive is Kafka's sasl.server.max.receive.size.
	DefaultMaxSASLReceive = 524288
	// DefaultFailedAuthDelay is Kafka's
	// connection.failed.authentication.delay.ms.
	DefaultFailedAuthDelay = 100 * time.Millisecond
	// TLSHandshakeTimeout bounds a TLS handshake, so that a client that
	// opens a connection and never finishes it holds nothing for long.
	TLSHandshakeTimeout = 10 * time.Second
)

// SASLServer is a listener's SASL side: the mechanisms it enables and
// the server half of an exchange.
type SASLServer interface {
	// Mechanisms lists the enabled mechanisms (sasl.enabled.mechanisms),
	// as SaslHandshake responses list them.
	Mechanisms() []string
	// Start begins an exchange with mechanism; ok is false for a
	// mechanism that is not enabled.
	Start(mechanism string) (session SASLSession, ok bool)
}

// SASLSession is the server side of one SASL exchange.
type SASLSession interface {
	// Step consumes the client's next message and returns the reply.
	// done is true once the client has authenticated (the reply is still
	// sent). An error fails the authentication; its text is sent to the
	// client.
	Step(ctx context.Context, msg []byte) (reply []byte, done bool, err error)
	// User is the authenticated user's name once done.
	User() string
}

// Anonymous is the principal of a connection that has not authenticated
// (PLAINTEXT, or SSL without a client certificate), as Kafka names it.
const Anonymous = "User:ANONYMOUS"

func (l Listener) withDefaults() Listener {
	if l.MaxSASLReceive <= 0 {
		l.MaxSASLReceive = DefaultMaxSASLReceive
	}
	if l.FailedAuthDelay == 0 {
		l.FailedAuthDelay = DefaultFailedAuthDelay
	}
	return l
}
