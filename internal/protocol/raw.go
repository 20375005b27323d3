package protocol

import (
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sendable is response bytes that are not in memory (record batches in a
// segment file): the write goroutine sends them with WriteTo, straight to
// the connection, which on a TCP connection may use sendfile(2).
//
// WriteTo must write exactly Len bytes or fail; after a failure the
// connection is closed, since its stream of frames is broken.
type Sendable interface {
	Len() int64
	io.WriterTo
}

// RawResponse is a response whose body the handler encoded itself, with
// parts that are sent from elsewhere (Sendable) rather than copied into
// the body: a Fetch response's record batches. The frame is the response
// header, then Body with each part's bytes inserted at its offset.
//
// It embeds the decoded response of its key and version (for Key,
// GetVersion and SetVersion; its fields may be empty), so it can be given
// wherever a kmsg.Response is: as Response.Body or returned by a Later.
// The server never calls its AppendTo; the version Body was encoded at
// must be the request's.
type RawResponse struct {
	kmsg.Response
	Body  []byte
	Parts []RawPart
}

// RawPart is one part of a RawResponse: Data goes at offset At of Body
// (parts in increasing At order; several may share an offset).
type RawPart struct {
	At   int
	Data Sendable
}

// size returns the body's size with its parts.
func (r *RawResponse) size() int64 {
	n := int64(len(r.Body))
	for _, p := range r.Parts {
		n += p.Data.Len()
	}
	return n
}
