package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
)

// tcpPair returns the two ends of a loopback TCP connection, closed when the
// test ends.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// sendOver writes r to a fresh TCP connection (sendfile where the file
// system is the OS's) and returns what the other end received and
// WriteTo's result.
func sendOver(t *testing.T, r Records) ([]byte, int64, error) {
	t.Helper()
	c, s := tcpPair(t)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c)
		got <- b
	}()
	n, err := r.WriteTo(s)
	s.CloseWrite()
	return <-got, n, err
}

// Records sent to a socket (sendfile on the OS's file system, a pooled
// buffer on MemFS), written to a buffer and appended to a slice are the
// bytes Read returns, for every limit of TestReadLimits' kind.
func TestRecordsWriteTo(t *testing.T) {
	forEachEnv(t, func(t *testing.T, env testEnv, cfg Config) {
		l := mustOpen(t, env.dir, cfg)
		defer l.Close()
		// Twelve batches of 3 records, of growing size: offsets 0-35.
		var all []byte
		for i := range 12 {
			b := newBatch(3, 30+i*20, int64(i)).filled(byte(i)).encode()
			info := mustAppend(t, l, b, 0)
			all = append(all, stored(b, info.FirstOffset, 0)...)
		}
		for _, tt := range []struct {
			offset, maxOffset int64
			maxBytes          int
			minOne            bool
		}{
			{0, 36, 1 << 20, false},
			{7, 36, 1 << 20, false},
			{3, 36, 700, false},
			{3, 36, 10, true},
			{0, 20, 1 << 20, true},
			{30, 36, 1 << 20, true},
			{36, 36, 1 << 20, true},
		} {
			t.Run(fmt.Sprintf("%d-%d-%d-%v", tt.offset, tt.maxOffset, tt.maxBytes, tt.minOne), func(t *testing.T) {
				want, err := l.Read(tt.offset, tt.maxOffset, tt.maxBytes, tt.minOne)
				if err != nil {
					t.Fatal(err)
				}
				if tt.offset < 36 && len(want) == 0 {
					t.Fatalf("Read returned nothing")
				}
				if !bytes.Contains(all, want) {
					t.Fatalf("Read returned bytes the log does not hold")
				}
				r, err := l.Slice(tt.offset, tt.maxOffset, tt.maxBytes, tt.minOne)
				if err != nil {
					t.Fatal(err)
				}
				if r.Len() != int64(len(want)) {
					t.Fatalf("Len %d, Read gave %d bytes", r.Len(), len(want))
				}
				got, n, err := sendOver(t, r)
				if err != nil || n != int64(len(want)) || !bytes.Equal(got, want) {
					t.Fatalf("over TCP: wrote %d, %v; received %d bytes, equal %v; want %d", n, err, len(got), bytes.Equal(got, want), len(want))
				}
				var buf bytes.Buffer
				if n, err := r.WriteTo(&buf); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
					t.Fatalf("to a buffer: wrote %d, %v; equal %v", n, err, bytes.Equal(buf.Bytes(), want))
				}
				prefix := []byte("x")
				if app, err := r.AppendTo(prefix); err != nil || !bytes.Equal(app, append([]byte("x"), want...)) {
					t.Fatalf("AppendTo: %v, equal %v", err, bytes.Equal(app, append([]byte("x"), want...)))
				}
			})
		}
	})
}

// Records taken before the log cut, deleted or closed their segment send
// nothing (ErrRecordsGone); Records taken after a cut are good.
func TestRecordsGone(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			cfg := testConfig(env.fs, newFakeClock())
			cfg.SegmentBytes = 1024
			l := mustOpen(t, env.dir, cfg)
			defer l.Close()
			appendN(t, l, 20, 2, 40, 0, 0) // offsets 0-39, several segments
			slice := func(offset int64) Records {
				t.Helper()
				r, err := l.Slice(offset, l.EndOffset(), 1<<20, true)
				if err != nil || r.Len() == 0 {
					t.Fatalf("Slice(%d): %d bytes, %v", offset, r.Len(), err)
				}
				return r
			}
			gone := func(what string, r Records) {
				t.Helper()
				var buf bytes.Buffer
				if n, err := r.WriteTo(&buf); !errors.Is(err, ErrRecordsGone) || n != 0 {
					t.Errorf("%s: WriteTo wrote %d, %v; want nothing, ErrRecordsGone", what, n, err)
				}
				if got, n, err := sendOver(t, r); !errors.Is(err, ErrRecordsGone) || n != 0 || len(got) != 0 {
					t.Errorf("%s: over TCP wrote %d (%d received), %v; want nothing, ErrRecordsGone", what, n, len(got), err)
				}
				if _, err := r.AppendTo(nil); !errors.Is(err, ErrRecordsGone) {
					t.Errorf("%s: AppendTo: %v, want ErrRecordsGone", what, err)
				}
			}

			tail := slice(36) // the active segment's last batches
			if err := l.Truncate(38); err != nil {
				t.Fatal(err)
			}
			gone("after a truncation", tail)
			appendN(t, l, 1, 2, 90, 0, 0)
			after := slice(36)
			want, err := l.Read(36, l.EndOffset(), 1<<20, true)
			if err != nil {
				t.Fatal(err)
			}
			if got, n, err := sendOver(t, after); err != nil || n != int64(len(want)) || !bytes.Equal(got, want) {
				t.Fatalf("taken after the truncation: wrote %d, %v; equal %v", n, err, bytes.Equal(got, want))
			}

			head := slice(0)
			if err := l.AdvanceStartOffset(20); err != nil {
				t.Fatal(err)
			}
			gone("after its segment was deleted", head)

			last := slice(36)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			gone("after the log closed", last)
		})
	}
}

// A Records being sent when the log truncates its segment and appends other
// bytes where it was stops at the cut: WriteTo hands nothing more to the
// socket and fails with ErrRecordsGone (without the check, it sent the new
// bytes in the old ones' place, or failed otherwise). The bytes below the
// cut arrive unchanged. Bytes past the cut that sendfile had already handed
// to the socket may arrive changed: the kernel sends file pages by
// reference, and the cut and the appends rewrite the page they share (as
// with Kafka's transferTo; a follower refuses what its leader cannot have
// held, replica.AppendFromLeader). The reader reads nothing until the log
// has changed, and the socket buffers are far smaller than the records, so
// the change lands in the middle of the send.
func TestRecordsCutWhileSending(t *testing.T) {
	for _, mk := range fileSystems(t) {
		env := mk(t)
		t.Run(env.name, func(t *testing.T) {
			cfg := testConfig(env.fs, newFakeClock())
			cfg.SegmentBytes = 64 << 20
			l := mustOpen(t, env.dir, cfg)
			defer l.Close()
			batches := appendN(t, l, 64, 1, 64<<10, 0, 0) // 4 MiB, 0x00.. fill per batch
			want := concat(batches...)
			r, err := l.Slice(0, l.EndOffset(), 64<<20, true)
			if err != nil || r.Len() != int64(len(want)) {
				t.Fatalf("Slice: %d bytes, %v", r.Len(), err)
			}
			c, s := tcpPair(t)
			c.SetReadBuffer(32 << 10)
			s.SetWriteBuffer(32 << 10)
			type result struct {
				n   int64
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := r.WriteTo(s)
				s.CloseWrite()
				done <- result{n, err}
			}()
			// Cut the log to its first batch and fill it again with
			// batches of another content, while the send waits for room.
			if err := l.Truncate(1); err != nil {
				t.Fatal(err)
			}
			for range 64 {
				mustAppend(t, l, newBatch(1, 64<<10, 0).filled(0xee).encode(), 1)
			}
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			res := <-done
			if !errors.Is(res.err, ErrRecordsGone) || res.n >= int64(len(want)) {
				t.Fatalf("WriteTo: wrote %d of %d, %v; want it stopped with ErrRecordsGone", res.n, len(want), res.err)
			}
			if int64(len(got)) != res.n {
				t.Fatalf("received %d bytes, WriteTo says %d", len(got), res.n)
			}
			kept := min(len(got), len(batches[0]))
			if !bytes.Equal(got[:kept], want[:kept]) {
				t.Fatalf("the first %d bytes received, below the cut, differ from the records", kept)
			}
		})
	}
}
