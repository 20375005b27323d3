package protocol

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFrameClass(t *testing.T) {
	for _, tc := range []struct{ n, class, size int }{
		{1, 0, 1},
		{64 << 10, 0, 64 << 10},
		{64<<10 + 1, 1, 68 << 10}, // a sixteenth more
		{128 << 10, 16, 128 << 10},
		{1_000_012, 63, 1_015_808}, // a producer's default batch.max.bytes request: 512 KiB + 15 × 32 KiB
		{1 << 20, 64, 1 << 20},
		{1<<20 + 1, 65, 1<<20 + 64<<10},
		{6_000_000, 103, 6_029_312}, // six partitions' batches of 1 MB: 4 MiB + 7 × 256 KiB
		{16 << 20, 128, 16 << 20},
		{16<<20 + 1, -1, 16<<20 + 1},
	} {
		if c := frameClass(tc.n); c != tc.class {
			t.Errorf("frameClass(%d) = %d, want %d", tc.n, c, tc.class)
		}
		size := frameBufferSize(tc.n)
		if size != tc.size {
			t.Errorf("frameBufferSize(%d) = %d, want %d", tc.n, size, tc.size)
		}
		b := getFrameBuffer(size)
		if len(b) != size || cap(b) != size {
			t.Errorf("getFrameBuffer(%d): len %d cap %d", size, len(b), cap(b))
		}
		putFrameBuffer(b)
	}
	// Every size from the smallest class to the largest has a class that
	// holds it, wastes at most a sixteenth, and is the smallest that does.
	prev := 0
	for n := frameClassMin; n <= frameClassMax; n += 1 + n/997 {
		c := frameClass(n)
		size := frameClassSize(c)
		if size < n || size-n > n/16 || frameClass(size) != c || c > 0 && frameClassSize(c-1) >= n {
			t.Fatalf("frame of %d bytes: class %d of %d bytes (the one below: %d)", n, c, size, frameClassSize(max(c-1, 0)))
		}
		if size < prev {
			t.Fatalf("class sizes not increasing at %d bytes", n)
		}
		prev = size
	}
	if c := frameClass(frameClassMax); c != frameClasses-1 {
		t.Fatalf("the largest class is %d of %d", c, frameClasses)
	}
	// Buffers of other sizes are not pooled: a later get never returns
	// one of another size.
	putFrameBuffer(make([]byte, 100<<10))
	for range 10 {
		if b := getFrameBuffer(128 << 10); cap(b) != 128<<10 {
			t.Fatalf("getFrameBuffer(128 KiB) has cap %d", cap(b))
		}
	}
}

// Large Produce frames are read into reused buffers: pipelined requests,
// each filled with its own byte, must each reach the handler with exactly
// their own bytes, whatever the earlier ones left in the buffers.
func TestPipelinedProduceFramesKeepTheirBytes(t *testing.T) {
	const n = 40
	sizes := []int{300 << 10, 1_000_000, 70 << 10, 2 << 20, 200 << 10}
	next := 0
	bad := make(chan error, n)
	h := HandlerFunc(func(_ context.Context, req *Request) Response {
		r := req.Body.(*kmsg.ProduceRequest)
		want := bytes.Repeat([]byte{byte(next + 1)}, sizes[next%len(sizes)])
		if got := r.Topics[0].Partitions[0].Records; !bytes.Equal(got, want) {
			bad <- fmt.Errorf("request %d: %d bytes of records, not %d bytes of %d", next, len(got), len(want), next+1)
		}
		next++
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		// Answered later, as acks=all is: the next frames are read
		// (into the pool's buffers) meanwhile.
		return Response{Later: func() kmsg.Response { return resp }}
	})
	_, addr := startServer(t, Config{}, h)
	c := dialRaw(t, addr)
	go func() {
		for i := range n {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 9, -1, 1000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = bytes.Repeat([]byte{byte(i + 1)}, sizes[i%len(sizes)])
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			c.send(req, int32(i))
		}
	}()
	for range n {
		c.recvFrame()
	}
	close(bad)
	for err := range bad {
		t.Error(err)
	}
	if next != n {
		t.Fatalf("%d requests handled, want %d", next, n)
	}
}

// copyPreemptibly copies exactly what copy does, whatever the sizes (a
// shorter destination used to make it spin for ever: review).
func TestCopyPreemptibly(t *testing.T) {
	sizes := []int{0, 1, copyPiece - 1, copyPiece, copyPiece + 1, 3*copyPiece + 17}
	for _, ns := range sizes {
		for _, nd := range sizes {
			src := make([]byte, ns)
			for i := range src {
				src[i] = byte(i*7 + i>>8)
			}
			want, got := make([]byte, nd), make([]byte, nd)
			copy(want, src)
			copyPreemptibly(got, src)
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bytes into %d: differs from copy", ns, nd)
			}
		}
	}
}

// copyPreemptibly lets other goroutines run between its pieces: with one P,
// a goroutine made runnable just before a copy of four pieces has run when
// the copy returns (one memmove would have kept it waiting, and the
// garbage collector's stack scan with it).
func TestCopyPreemptiblyYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	src, dst := make([]byte, 4*copyPiece), make([]byte, 4*copyPiece)
	var ran atomic.Bool
	go ran.Store(true)
	copyPreemptibly(dst, src)
	if !ran.Load() {
		t.Fatal("a runnable goroutine did not run during a copy of four pieces: the copy never yielded")
	}
}
