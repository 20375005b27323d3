package protocol

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// memSendable is a Sendable of bytes in memory; with fail it writes half of
// them and fails, as records cut before they were sent.
type memSendable struct {
	b    []byte
	fail bool
}

func (m memSendable) Len() int64 { return int64(len(m.b)) }

func (m memSendable) WriteTo(w io.Writer) (int64, error) {
	if m.fail {
		n, _ := w.Write(m.b[:len(m.b)/2])
		return int64(n), errors.New("records gone")
	}
	n, err := w.Write(m.b)
	return int64(n), err
}

// rawMetadata is the Metadata response of the test handler encoded whole,
// then given as a RawResponse with the bytes at cuts sent as parts: the
// client must read the very same response.
func rawMetadata(req *Request, cuts [][2]int, fail bool) *RawResponse {
	body := metadataResponse(req, req.Body.(*kmsg.MetadataRequest))
	body.SetVersion(req.Version)
	enc := body.AppendTo(nil)
	raw := &RawResponse{Response: body}
	prev := 0
	for _, c := range cuts {
		raw.Body = append(raw.Body, enc[prev:c[0]]...)
		raw.Parts = append(raw.Parts, RawPart{At: len(raw.Body), Data: memSendable{b: enc[c[0]:c[1]], fail: fail}})
		prev = c[1]
	}
	raw.Body = append(raw.Body, enc[prev:]...)
	return raw
}

// Raw responses, ready and from a Later, with parts anywhere in the body
// (first byte, adjacent, last byte), pipelined with ordinary responses,
// reach the client as the responses they encode, in order; a part that
// fails to send closes the connection after the responses before it.
func TestRawResponse(t *testing.T) {
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		var cuts [][2]int
		later, fail := false, false
		switch topicOf(req) {
		case "raw":
			cuts = [][2]int{{0, 3}, {3, 9}, {20, 21}}
		case "raw-end":
			cuts = [][2]int{{10, 30}}
			later = true
		case "raw-fail":
			cuts = [][2]int{{10, 30}}
			fail = true
		default:
			return Response{}, false
		}
		raw := rawMetadata(req, cuts, fail)
		if topicOf(req) == "raw-end" {
			// An empty part that ends the body.
			raw.Parts = append(raw.Parts, RawPart{At: len(raw.Body), Data: memSendable{}})
		}
		if later {
			return Response{Later: func() kmsg.Response { return raw }}, true
		}
		return Response{Body: raw}, true
	}
	_, addr := startServer(t, Config{}, h)
	for _, version := range []int16{1, 9, 12} { // a flexible header from v9
		t.Run(fmt.Sprint("v", version), func(t *testing.T) {
			c := dialRaw(t, addr)
			topics := []string{"plain", "raw", "raw-end", "plain", "raw", "raw-fail", "plain"}
			var frames []byte
			for i, topic := range topics {
				frames = AppendRequest(frames, metadataRequest(version, topic), int32(i), nil)
			}
			c.write(frames)
			for i, topic := range topics[:5] {
				resp := metadataRequest(version).ResponseKind()
				if corr := c.recv(resp); corr != int32(i) {
					t.Fatalf("correlation id %d, want %d", corr, i)
				}
				if got := *resp.(*kmsg.MetadataResponse).Topics[0].Topic; got != topic {
					t.Fatalf("response %d for topic %q, want %q", i, got, topic)
				}
			}
			// The failing part's frame was cut short, and nothing follows.
			c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
			if frame, err := ReadResponse(c.br, 64<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("after the failed part: %d-byte frame, %v; want it cut short (unexpected EOF)", len(frame), err)
			}
		})
	}
}

// sentObserver reports the ResponseSent calls.
type sentObserver struct{ sent chan int16 }

func (o *sentObserver) RequestDone(RequestDone)                    {}
func (o *sentObserver) ResponseSent(key, _ int16, _ time.Duration) { o.sent <- key }

// A raw response whose records end the frame leaves nothing in the write
// buffer once sent: it is still reported as sent at once, not when some
// later response is flushed (which a connection that only fetches may
// never have).
func TestResponseSentAfterRawResponse(t *testing.T) {
	h := &testHandler{}
	h.hook = func(ctx context.Context, req *Request) (Response, bool) {
		if topicOf(req) != "raw-end" {
			return Response{}, false
		}
		raw := rawMetadata(req, [][2]int{{10, 30}}, false)
		raw.Parts = append(raw.Parts, RawPart{At: len(raw.Body), Data: memSendable{}})
		return Response{Body: raw}, true
	}
	obs := &sentObserver{sent: make(chan int16, 16)}
	_, addr := startServer(t, Config{Observer: obs}, h)
	c := dialRaw(t, addr)
	c.write(AppendRequest(nil, metadataRequest(9, "raw-end"), 0, nil))
	c.recv(metadataRequest(9).ResponseKind())
	select {
	case key := <-obs.sent:
		if key != 3 {
			t.Fatalf("ResponseSent for key %d, want 3 (Metadata)", key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the response was written but not reported as sent")
	}
}
