package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

// SaslHandshake (key 17), v0–1, and SaslAuthenticate (key 36), v0–2.
//
// On a SASL listener (SASL_PLAINTEXT, SASL_SSL) the protocol server
// answers both itself, since they change the connection's state
// (internal/protocol, sasl.go; docs/security.md): the handshake picks the
// mechanism (v0: the tokens follow as bare frames, v1: in SaslAuthenticate
// requests), SaslAuthenticate carries the mechanism's messages, and
// nothing else is served until the client has authenticated. Only a
// request on a listener without SASL reaches these handlers, and gets
// ILLEGAL_SASL_STATE, as Kafka answers there.
func (b *Broker) handleSASLHandshake(_ context.Context, req *protocol.Request) protocol.Response {
	resp := req.Body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return reply(resp)
}

// handleSASLAuthenticate: see handleSASLHandshake.
func (b *Broker) handleSASLAuthenticate(_ context.Context, req *protocol.Request) protocol.Response {
	resp := req.Body.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "this listener has no SASL"
	resp.ErrorMessage = &msg
	return reply(resp)
}
