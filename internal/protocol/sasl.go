package protocol

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys the connection handles itself on a SASL listener.
const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// saslState is a connection's SASL progress. Read goroutine only.
type saslState struct {
	// session is the exchange in progress (after a SaslHandshake, until
	// it succeeds or fails); mechanism is its mechanism.
	session   SASLSession
	mechanism string
	// raw: the handshake was v0, so the exchange's tokens come as bare
	// size-prefixed frames, without request headers.
	raw bool
	// authenticated is set once an exchange has succeeded; principal is
	// then the connection's principal (ConnInfo.Principal) and
	// authMechanism the mechanism it used.
	authenticated bool
	authMechanism string
	// expires is when the session ends (connections.max.reauth.ms); zero
	// for never.
	expires time.Time
}

// handshakeTLS runs the TLS handshake of a connection on a TLS listener
// and names its principal from a client certificate. It returns false if
// the connection must close.
func (c *conn) handshakeTLS() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(c.ctx, TLSHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		if c.ctx.Err() == nil {
			c.log.Info("protocol: TLS handshake failed; closing connection", "err", err)
		}
		return false
	}
	if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 && c.lis.TLSPrincipal != nil {
		if c.info.Principal = c.lis.TLSPrincipal(certs[0]); c.info.Principal == "" {
			return false
		}
	}
	return true
}

// saslPending reports whether the connection is on a SASL listener and
// has not authenticated, or is in the middle of an exchange (a
// re-authentication): its frames are then limited to MaxSASLReceive.
func (c *conn) saslPending() bool {
	return c.lis.SASL != nil && (!c.sasl.authenticated || c.sasl.session != nil)
}

// saslRawToken answers a token of a v0 exchange (a frame without a
// request header). It returns the pending response to queue; false if the
// connection must close at once (a mechanism panicked).
func (c *conn) saslRawToken(token []byte) (p pending, ok bool) {
	defer c.recoverSASL(&ok)
	return c.saslRawStep(token), true
}

// recoverSASL turns a panic of a SASL mechanism into a closed connection
// rather than a crashed broker.
func (c *conn) recoverSASL(ok *bool) {
	if r := recover(); r != nil {
		c.log.Error("protocol: panic in SASL authentication; closing connection", "panic", r, "stack", string(debug.Stack()))
		*ok = false
	}
}

func (c *conn) saslRawStep(token []byte) pending {
	st := &c.sasl
	reply, done, err := st.session.Step(c.ctx, token)
	if err != nil {
		c.log.Info("protocol: SASL authentication failed; closing connection", "mechanism", st.mechanism, "err", err)
		st.session = nil
		// Kafka closes a v0 exchange that fails without a reply.
		return pending{resp: Response{NoResponse: true, Close: true, Later: c.failedAuthDelay()}}
	}
	if done {
		st.raw = false
		if !c.authenticated(st.session.User()) {
			return pending{resp: Response{NoResponse: true, Close: true, Later: c.failedAuthDelay()}}
		}
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(reply)), uint32(len(reply)))
	return pending{frame: append(frame, reply...)}
}

// authenticated records a successful exchange for user; false if it was
// a re-authentication as another principal, which fails.
func (c *conn) authenticated(user string) bool {
	st := &c.sasl
	principal := "User:" + user
	if st.authenticated && principal != c.info.Principal {
		c.log.Info("protocol: SASL re-authentication as another principal; closing connection",
			"principal", c.info.Principal, "new", principal)
		st.session = nil
		return false
	}
	if !st.authenticated {
		c.info.Principal = principal
	}
	st.authenticated, st.authMechanism, st.session = true, st.mechanism, nil
	if c.lis.MaxReauth > 0 {
		st.expires = time.Now().Add(c.lis.MaxReauth)
	}
	c.log.Debug("protocol: SASL authenticated", "principal", principal, "mechanism", st.mechanism)
	return true
}

// failedAuthDelay returns a Later that holds a failed authentication's
// response back for FailedAuthDelay (connection.failed.authentication.delay.ms).
func (c *conn) failedAuthDelay() func() kmsg.Response {
	d := c.lis.FailedAuthDelay
	return func() kmsg.Response {
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-c.ctx.Done():
			}
		}
		return nil
	}
}

// saslRequest handles a request on a SASL listener before the broker
// sees it: the SASL requests themselves, and the gate that lets nothing
// else through before authentication or after the session expired.
// intercepted is true when resp is the answer; ok is false when the
// connection must close at once.
func (c *conn) saslRequest(req *Request) (resp Response, intercepted, ok bool) {
	defer c.recoverSASL(&ok)
	st := &c.sasl
	if st.authenticated && !st.expires.IsZero() && time.Now().After(st.expires) {
		// As Kafka: an expired session is closed at any request, a
		// late re-authentication included.
		c.log.Info("protocol: SASL session expired without re-authentication; closing connection",
			"principal", c.info.Principal, "key", req.Key)
		return Response{}, false, false
	}
	switch req.Key {
	case saslHandshakeKey:
		return c.saslHandshake(req.Body.(*kmsg.SASLHandshakeRequest)), true, true
	case saslAuthenticateKey:
		return c.saslAuthenticate(req.Body.(*kmsg.SASLAuthenticateRequest)), true, true
	case apiVersionsKey:
		return Response{}, false, true
	}
	if !st.authenticated {
		c.log.Info("protocol: request before SASL authentication; closing connection", "key", req.Key)
		return Response{}, false, false
	}
	return Response{}, false, true
}

func (c *conn) saslHandshake(req *kmsg.SASLHandshakeRequest) Response {
	st := &c.sasl
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = c.lis.SASL.Mechanisms()
	illegal := func(why string) Response {
		c.log.Info("protocol: unexpected SaslHandshake; closing connection", "why", why)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Response{Body: resp, Close: true}
	}
	switch {
	case st.session != nil:
		return illegal("an exchange is already in progress")
	case st.authenticated && c.lis.MaxReauth <= 0:
		// Kafka answers so when re-authentication is off, and keeps
		// the connection.
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Response{Body: resp}
	case st.authenticated && req.Version < 1:
		return illegal("re-authentication needs SaslHandshake v1")
	case st.authenticated && req.Mechanism != st.authMechanism:
		return illegal(fmt.Sprintf("re-authentication with %s, not %s", req.Mechanism, st.authMechanism))
	}
	session, found := c.lis.SASL.Start(req.Mechanism)
	if !found {
		c.log.Info("protocol: SASL mechanism not enabled; closing connection", "mechanism", req.Mechanism)
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return Response{Body: resp, Close: true}
	}
	st.session, st.mechanism, st.raw = session, req.Mechanism, req.Version == 0
	return Response{Body: resp}
}

func (c *conn) saslAuthenticate(req *kmsg.SASLAuthenticateRequest) Response {
	st := &c.sasl
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	fail := func(msg string) Response {
		st.session = nil
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &msg
		later := c.failedAuthDelay()
		return Response{Close: true, Later: func() kmsg.Response { later(); return resp }}
	}
	if st.session == nil || st.raw {
		st.session = nil
		msg := "SaslAuthenticate without a SaslHandshake v1 before it"
		c.log.Info("protocol: unexpected SaslAuthenticate; closing connection")
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = &msg
		return Response{Body: resp, Close: true}
	}
	reply, done, err := st.session.Step(c.ctx, req.SASLAuthBytes)
	if err != nil {
		c.log.Info("protocol: SASL authentication failed; closing connection", "mechanism", st.mechanism, "err", err)
		return fail(err.Error())
	}
	resp.SASLAuthBytes = reply
	if done {
		if !c.authenticated(st.session.User()) {
			return fail("re-authentication as another principal")
		}
		if c.lis.MaxReauth > 0 && req.Version >= 1 {
			resp.SessionLifetimeMillis = c.lis.MaxReauth.Milliseconds()
		}
	}
	return Response{Body: resp}
}
