package protocol

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded client request.
type Request struct {
	// Key and Version are the API key and version from the request header.
	Key     int16
	Version int16
	// CorrelationID is echoed in the response header.
	CorrelationID int32
	// ClientID is the header's nullable client id.
	ClientID *string
	// Body is the decoded request; Body.GetVersion() == Version. Byte
	// fields (Produce records, SASL tokens, group metadata) alias the
	// request's frame buffer; strings are copies (decoding must keep
	// copying them). The server reuses the buffer of a large Produce once
	// Handle returns (see Handler); other requests' buffers are never
	// reused, so handlers may keep their byte fields.
	Body kmsg.Request
	// UnsupportedVersion is non-zero only for an ApiVersions request whose
	// version is above the highest one supported: it then holds the
	// version the client asked for, while Version is 0 and Body is an
	// empty v0 ApiVersionsRequest (the rest of the frame is not parsed).
	// The handler answers with ErrorCode UNSUPPORTED_VERSION (35) and the
	// supported ranges; the server encodes that response as v0 so that
	// any client can read it and retry with a version it finds there.
	UnsupportedVersion int16
	// Conn describes the connection the request arrived on.
	Conn *ConnInfo

	// held is the request's share of the server's memory budget; nil for
	// a Request not made by a Server.
	held *held
}

// ConnInfo describes one client connection.
type ConnInfo struct {
	// ID is unique among the server's connections for its lifetime.
	ID     uint64
	Remote net.Addr
	Local  net.Addr
	// Listener is the name of the listener the connection came in on
	// (Listener.Name).
	Listener string
	// Principal is who the client is, as Kafka names principals:
	// "User:<name>" after SASL authentication, "User:<mapped subject>"
	// for a TLS client certificate, Anonymous otherwise. It is set
	// before the handler sees any request but ApiVersions and never
	// changes after (a re-authentication must keep it).
	Principal string
}

// Response is a handler's answer to one request.
//
// Exactly one of Body and Later is set, unless NoResponse is true. Later is
// for requests that must wait (acks=all produce, long-poll fetch, group
// joins): it is called on the connection's write goroutine, in request order,
// and may block; it must return when its context (the one passed to Handle)
// is done. Once that context is done the server calls no further Later
// funcs, but it cannot interrupt one that is running: Server.Close waits for
// it, so a Later that ignores the context hangs Close.
//
// The server takes ownership of the returned response: it may set its
// version to the request's (it does so only when they differ) and encodes
// it on the write goroutine, so the handler must not modify it afterwards.
// A response whose key differs from the request's, or a missing response,
// is a handler bug and closes the connection.
type Response struct {
	Body  kmsg.Response
	Later func() kmsg.Response
	// NoResponse sends nothing back (Produce with acks=0). Later, if set, is
	// still called, in order, and its result dropped.
	NoResponse bool
	// Close closes the connection once the responses before this one (and
	// this one's, if any) have been written, as Kafka does after an acks=0
	// produce fails.
	Close bool
	// Mute, with Later, stops reading the connection until Later has
	// returned. For a long poll (a parked fetch), which may wait as long
	// as the client asks: samsa pipelines requests, but whatever a client
	// sent behind a long poll would otherwise be handled and its response
	// held, unwritable, for that long (Kafka mutes every connection until
	// its response is sent).
	Mute bool
	// Throttle, if positive, stops the reading of the connection for that
	// long once this response is queued: a client over its quota (the
	// handler set the response's ThrottleMillis), as Kafka mutes a
	// throttled channel after sending the response (KIP-219).
	Throttle time.Duration
}

// Handler processes decoded requests.
//
// Handle is called on the connection's read goroutine, one request at a time
// in arrival order, so the side effects of the requests of one connection
// happen in that order (Kafka guarantees clients this: an idempotent
// producer's pipelined batches are appended in the order sent). Handle must
// not block for long; waiting belongs in Response.Later. The context is
// cancelled when the connection closes or the server stops.
//
// The bytes of a large Produce request (the record batches its body points
// into) are reused for a later request once Handle returns: a handler
// copies what it keeps (appending to a log does), and its Later must not
// read them.
type Handler interface {
	Handle(ctx context.Context, req *Request) Response
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) Response

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req *Request) Response { return f(ctx, req) }
