package protocol

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// blockingPart is a Sendable that, once its send starts, waits for release.
type blockingPart struct {
	n                int
	entered, release chan struct{}
}

func (b blockingPart) Len() int64 { return int64(b.n) }

func (b blockingPart) WriteTo(w io.Writer) (int64, error) {
	close(b.entered)
	<-b.release
	n, err := w.Write(make([]byte, b.n))
	return int64(n), err
}

// Responses coalesced in the write buffer before a RawResponse are written
// before its parts, and the budget they hold (frames and encoded responses)
// is released then, not after every part has been sent: a part that waits
// on a slow client (up to WriteTimeout per part) must not keep bytes
// already written counted against queued.max.request.bytes (found by
// review of d61e532).
func TestRawResponseReleasesWrittenBytesBeforeParts(t *testing.T) {
	gate := make(chan struct{})
	part := blockingPart{n: 10, entered: make(chan struct{}), release: make(chan struct{})}
	const big = 200 << 10
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		kind := func() kmsg.Response {
			r := req.Body.ResponseKind()
			r.SetVersion(req.Version)
			return r
		}
		switch topicOf(req) {
		case "gate":
			return Response{Later: func() kmsg.Response { <-gate; return metadataResponse(req, req.Body.(*kmsg.MetadataRequest)) }}, true
		case "big":
			return Response{Body: &RawResponse{Response: kind(), Body: make([]byte, big)}}, true
		case "block":
			return Response{Body: &RawResponse{Response: kind(), Parts: []RawPart{{At: 0, Data: part}}}}, true
		}
		return Response{}, false
	}
	s, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	var frames []byte
	for i, topic := range []string{"gate", "big", "block", "plain"} {
		frames = AppendRequest(frames, metadataRequest(12, topic), int32(i), nil)
	}
	c.write(frames)
	// "plain" handled: "big" and "block" are queued behind "gate".
	waitFor(t, 5*time.Second, func() error {
		if h.handled() < 4 {
			return io.ErrNoProgress
		}
		return nil
	})
	close(gate)
	c.recvFrame() // gate
	if f := c.recvFrame(); len(f) < big {
		t.Fatalf("big: %d bytes", len(f))
	}
	select {
	case <-part.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("part not sent")
	}
	used := s.Budget().Used()
	close(part.release)
	c.recvFrame() // block
	c.recvFrame() // plain
	if used >= big {
		t.Errorf("while the part waited, after the client had read the %d-byte response before it, the budget still counted %d bytes", big, used)
	}
}
