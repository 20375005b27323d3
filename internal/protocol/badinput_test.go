package protocol

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFrame builds a request frame by hand: size prefix, key, version,
// correlation id, null client id, then rest.
func rawFrame(key, version int16, rest ...[]byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, 1)
	b = kbin.AppendInt16(b, -1)
	for _, r := range rest {
		b = append(b, r...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// sizeOnly is a size prefix followed by a few bytes of whatever.
func sizeOnly(size uint32, tail ...byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, size), tail...)
}

// totalAlloc returns the bytes allocated by the process so far.
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestBadInput sends each kind of bad input on its own connection, expects
// the server to close that connection without answering, and then checks
// that a well-behaved client is still served by the same server.
func TestBadInput(t *testing.T) {
	const idle = time.Second
	h := &testHandler{}
	s, addr := startServer(t, Config{IdleTimeout: idle}, h)

	validMetadata := AppendRequest(nil, metadataRequest(1, "a"), 1, nil)
	tests := []struct {
		name  string
		input []byte
		// maxAlloc bounds the bytes the whole process may allocate
		// while the server deals with the input (0: not checked).
		maxAlloc uint64
		// stall: the input is incomplete and only the idle timeout
		// ends the connection.
		stall bool
	}{
		{name: "garbage", input: []byte("GET / HTTP/1.1\r\nHost: samsa\r\n\r\n")},
		{name: "negative length", input: sizeOnly(0xffffffff, 1, 2, 3, 4)},
		{name: "min int32 length", input: sizeOnly(0x80000000, 1, 2, 3, 4)},
		{name: "2 GiB length", input: sizeOnly(0x7fffffff, 0, 3, 0, 1), maxAlloc: 16 << 20},
		{name: "just over the limit", input: sizeOnly(DefaultMaxRequestBytes+1, 0, 3, 0, 1), maxAlloc: 16 << 20},
		{name: "Metadata frame over the non-Produce cap", input: sizeOnly(DefaultMaxNonProduceRequestBytes+1, 0, 3, 0, 1), maxAlloc: 4 << 20},
		{name: "unknown key frame over the non-Produce cap", input: sizeOnly(64<<20, 0x27, 0x0f, 0, 1), maxAlloc: 4 << 20},
		// A Produce frame may be larger: the server waits for its body.
		{name: "Produce frame over the non-Produce cap", input: sizeOnly(DefaultMaxNonProduceRequestBytes+1, 0, 0, 0, 9), stall: true},
		{name: "zero length", input: sizeOnly(0)},
		{name: "shorter than a header", input: sizeOnly(6, 0, 18, 0, 0, 0, 1)},
		{name: "unknown api key", input: rawFrame(9999, 0)},
		{name: "negative api key", input: rawFrame(-1, 0)},
		{name: "key kmsg knows but not implemented", input: rawFrame(19, 2, make([]byte, 16))},
		{name: "version above range", input: AppendRequest(nil, metadataRequest(13), 1, nil)},
		{name: "version below range", input: rawFrame(0, 2, make([]byte, 16))},
		{name: "negative version", input: rawFrame(3, -1)},
		{name: "client id longer than frame", input: func() []byte {
			b := rawFrame(18, 0)
			binary.BigEndian.PutUint16(b[12:], 500)
			return b
		}()},
		{name: "flexible header tags missing", input: func() []byte {
			// ApiVersions v3 header: tag count 5, then nothing.
			return rawFrame(18, 3, []byte{5})
		}()},
		{name: "truncated body", input: rawFrame(3, 1, kbin.AppendInt32(nil, 1))},
		{
			// A Metadata request claiming 2^31-1 topics in a 30-byte
			// frame: preallocating the array would take 64 GiB.
			name:     "array longer than frame",
			input:    rawFrame(3, 4, kbin.AppendInt32(nil, 1<<31-1), make([]byte, 16)),
			maxAlloc: 4 << 20,
		},
		{
			name:     "compact array longer than frame",
			input:    rawFrame(3, 12, []byte{0}, kbin.AppendUvarint(nil, 1<<31-1), make([]byte, 16)),
			maxAlloc: 4 << 20,
		},
		{
			name:     "string longer than frame",
			input:    rawFrame(3, 1, kbin.AppendInt32(nil, 1), kbin.AppendInt16(nil, 32767), []byte("abc")),
			maxAlloc: 4 << 20,
		},
		{name: "handler panic", input: AppendRequest(nil, metadataRequest(1, "panic"), 1, nil)},
		{name: "half a frame then silence", input: validMetadata[:len(validMetadata)/2], stall: true},
		{name: "half a size then silence", input: []byte{0, 0}, stall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.handled()
			// The server's idle clock starts at accept, after this.
			start := time.Now()
			c := dialRaw(t, addr)
			var alloc0 uint64
			if tt.maxAlloc > 0 {
				runtime.GC()
				alloc0 = totalAlloc()
			}
			c.write(tt.input)
			c.expectClosed()
			if tt.maxAlloc > 0 {
				if got := totalAlloc() - alloc0; got > tt.maxAlloc {
					t.Errorf("%d bytes allocated while rejecting the input, want at most %d", got, tt.maxAlloc)
				}
			}
			if elapsed := time.Since(start); tt.stall && elapsed < idle*9/10 {
				t.Errorf("closed after %v, before the %v idle timeout", elapsed, idle)
			}
			wantHandled := before
			if tt.name == "handler panic" {
				wantHandled++
			}
			if got := h.handled(); got != wantHandled {
				t.Errorf("handler called %d times, want %d", got-before, wantHandled-before)
			}
			waitFor(t, ioTimeout, func() error {
				if n := s.NumConnections(); n != 0 {
					return fmt.Errorf("%d connections still open", n)
				}
				return nil
			})
			checkServed(t, addr)
		})
	}
}

// TestBadInputAfterGoodRequests: requests before the bad one are still
// answered, in order, before the connection closes.
func TestBadInputAfterGoodRequests(t *testing.T) {
	_, addr := startServer(t, Config{}, &testHandler{})
	c := dialRaw(t, addr)
	var b []byte
	b = AppendRequest(b, metadataRequest(1, "a"), 1, nil)
	b = AppendRequest(b, metadataRequest(1, "b"), 2, nil)
	b = append(b, rawFrame(9999, 0)...)
	b = AppendRequest(b, metadataRequest(1, "never"), 3, nil)
	c.write(b)
	for _, want := range []int32{1, 2} {
		if corr := c.recv(metadataRequest(1).ResponseKind()); corr != want {
			t.Fatalf("correlation id %d, want %d", corr, want)
		}
	}
	c.expectClosed()
}

// TestDecodeAllocationBounded feeds the decoder hostile length prefixes and
// checks that what it allocates stays proportional to the frame. It records
// the worst ratios kmsg reaches (see doc.go).
func TestDecodeAllocationBounded(t *testing.T) {
	const frameSize = 256 << 10
	manyTags := func() []byte {
		// Distinct tag keys with empty values: two- and three-byte
		// keys plus a zero size.
		var tags []byte
		n := 0
		for key := uint32(0); len(tags) < frameSize-minRequestHeader-16; key++ {
			tags = kbin.AppendUvarint(tags, key)
			tags = append(tags, 0)
			n++
		}
		return append(kbin.AppendUvarint(nil, uint32(n)), tags...)
	}
	tests := []struct {
		name    string
		key     int16
		version int16
		body    []byte
		wantOK  bool
		// maxRatio bounds allocated bytes per frame byte.
		maxRatio float64
	}{
		{
			name: "metadata 2^31-1 topics", key: 3, version: 4,
			body:     append(kbin.AppendInt32(nil, 1<<31-1), make([]byte, 16)...),
			maxRatio: 0, // rejected before any allocation that depends on the count
		},
		{
			// DeleteTopics v4 is flexible: each empty topic name is one
			// byte on the wire and a 16-byte string header decoded.
			name: "delete topics v4 empty names", key: 20, version: 4,
			body: func() []byte {
				n := frameSize - minRequestHeader - 16
				b := kbin.AppendUvarint(nil, uint32(n+1))
				for range n {
					b = append(b, 1)
				}
				b = kbin.AppendInt32(b, 0) // timeout
				return append(b, 0)        // tags
			}(),
			wantOK:   true,
			maxRatio: 64,
		},
		{
			// Metadata v9 (flexible, no topic ids): two bytes per
			// topic, a 32-byte struct and a *string each.
			name: "metadata v9 empty topics", key: 3, version: 9,
			body: func() []byte {
				n := (frameSize - minRequestHeader - 16) / 2
				b := kbin.AppendUvarint(nil, uint32(n+1))
				for range n {
					b = append(b, 1, 0) // empty name, no tags
				}
				return append(b, 0, 0, 0, 0) // auto create, cluster and topic ops, tags
			}(),
			wantOK:   true,
			maxRatio: 64,
		},
		{
			name: "metadata v12 distinct tags", key: 3, version: 12,
			// The worst case found: every distinct unknown tag is a
			// map entry (about 40 bytes) for 3 or 4 wire bytes.
			body:     append([]byte{0, 0, 0}, manyTags()...), // null topics, auto create, topic ops, tags
			wantOK:   true,
			maxRatio: 64,
		},
		{
			name: "fetch v12 partitions", key: 1, version: 12,
			body: func() []byte {
				head := []byte{}
				head = kbin.AppendInt32(head, -1) // replica id
				head = kbin.AppendInt32(head, 0)  // max wait
				head = kbin.AppendInt32(head, 0)  // min bytes
				head = kbin.AppendInt32(head, 0)  // max bytes
				head = append(head, 0)            // isolation
				head = kbin.AppendInt32(head, 0)  // session id
				head = kbin.AppendInt32(head, -1) // session epoch
				head = append(head, 2)            // one topic
				head = append(head, 2, 't')       // topic name
				part := make([]byte, 0, 40)
				part = kbin.AppendInt32(part, 0)  // partition
				part = kbin.AppendInt32(part, -1) // current leader epoch
				part = kbin.AppendInt64(part, 0)  // fetch offset
				part = kbin.AppendInt32(part, -1) // last fetched epoch
				part = kbin.AppendInt64(part, -1) // log start offset
				part = kbin.AppendInt32(part, 0)  // partition max bytes
				part = append(part, 0)            // tags
				n := (frameSize - minRequestHeader - len(head) - 16) / len(part)
				b := append(head, kbin.AppendUvarint(nil, uint32(n+1))...)
				for range n {
					b = append(b, part...)
				}
				b = append(b, 0)    // topic tags
				b = append(b, 1)    // no forgotten topics
				b = append(b, 1)    // empty rack
				return append(b, 0) // tags
			}(),
			wantOK:   true,
			maxRatio: 64,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			req := kmsg.RequestForKey(tt.key)
			req.SetVersion(tt.version)
			if req.IsFlexible() {
				body = append([]byte{0}, body...) // empty header tags
			}
			frame := rawFrame(tt.key, tt.version, body)[4:]
			d := decoder{versions: kmsgVersions}
			runtime.GC()
			alloc0 := totalAlloc()
			_, err := d.decode(frame)
			got := totalAlloc() - alloc0
			if tt.wantOK && err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !tt.wantOK && err == nil {
				t.Fatal("hostile frame decoded")
			}
			ratio := float64(got) / float64(len(frame))
			t.Logf("%d-byte frame: %d bytes allocated (%.1fx), err=%v", len(frame), got, ratio, err)
			if limit := tt.maxRatio*float64(len(frame)) + 64<<10; float64(got) > limit {
				t.Fatalf("allocated %d bytes, want at most %.0f", got, limit)
			}
		})
	}
}
