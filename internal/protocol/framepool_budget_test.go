package protocol

import (
	"bufio"
	"net"
	"testing"
)

// A Produce frame read into a pooled buffer is charged to the memory
// budget for the buffer's whole capacity, which may exceed the frame's
// size (the pool's classes are powers of two): otherwise a client sending
// frames just past a class size would hold up to twice what the budget
// (queued.max.request.bytes) counts (found by review, issue 11).
func TestBulkFrameBufferIsCharged(t *testing.T) {
	for _, size := range []int{
		smallFrame + 1, // just past a class: allocated exactly
		1<<20 + 1,
		4<<20 + 1,
		8<<20 + 1,
		1_000_012, // a producer's default request: the 1 MiB class
		2<<20 - 1, // just under a class: that class
	} {
		s := NewServer(Config{Versions: testVersionsFunc, Logger: testLogger(t), QueuedMaxBytes: 1 << 30}, HandlerFunc(nil))
		defer s.Close()
		srv, cli := net.Pipe()
		c := newConn(s, srv, Listener{Name: "PLAINTEXT"})
		go func() {
			buf := make([]byte, 64<<10)
			for left := size; left > 0; {
				n, err := cli.Write(buf[:min(len(buf), left)])
				if err != nil {
					return
				}
				left -= n
			}
		}()
		frame, pooled, err := c.readFrame(bufio.NewReaderSize(srv, readBufferSize), size, true)
		srv.Close()
		cli.Close()
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		charged := c.charged.Load()
		t.Logf("size %9d: frame cap %9d, charged %9d, buffer held %9d (%.2fx the charge)",
			size, cap(frame), charged, cap(pooled), float64(cap(pooled))/float64(charged))
		if len(frame) != size {
			t.Errorf("size %d: read %d bytes", size, len(frame))
		}
		if pooled == nil || !isClassSize(cap(pooled)) {
			// Every step, the last of the frame's own size included,
			// is a class's: none is allocated afresh and dropped.
			t.Errorf("size %d: the frame's buffer (%d bytes) is not the pool's", size, cap(pooled))
		} else if cap(pooled) != cap(frame) {
			t.Errorf("size %d: frame cap %d in a %d-byte buffer", size, cap(frame), cap(pooled))
		}
		if held := int64(max(cap(frame), cap(pooled))); held != charged {
			t.Errorf("size %d: the frame's buffer holds %d bytes, the budget was charged %d", size, held, charged)
		}
		if held := max(cap(frame), cap(pooled)); held > size+size/16 {
			t.Errorf("size %d: a %d-byte buffer wastes more than a sixteenth", size, held)
		}
		c.give(charged)
		putFrameBuffer(pooled)
	}
}
