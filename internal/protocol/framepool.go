package protocol

import (
	"math/bits"
	"sync"
)

// Large Produce frames are read into pooled buffers: a producer at full
// speed sends a request of about 1 MB after another, and allocating each
// afresh cost a third of the broker's time in page faults, zeroing and
// garbage collection (docs/performance.md). The buffers come in power-of-
// two classes from frameClassMin to frameClassMax; larger frames, and the
// buffers of other requests, are allocated as before. The pool holds only
// buffers nobody references, and sync.Pool lets the garbage collector
// take them back, so it pins no memory beyond the next collections.
const (
	frameClassMin = smallFrame  // 64 KiB
	frameClassMax = 16 << 20    // 16 MiB
	frameClasses  = 24 - 16 + 1 // log2(frameClassMax) - log2(frameClassMin) + 1
)

var framePools [frameClasses]sync.Pool

// frameClass returns the class of a buffer of n bytes (the smallest one
// that holds n), or -1 if n is beyond the largest.
func frameClass(n int) int {
	if n > frameClassMax {
		return -1
	}
	if n <= frameClassMin {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(frameClassMin-1))
}

// frameBufferSize is the size of the buffer readFrame takes for n bytes of
// a Produce frame: its class's, if that wastes at most a sixteenth of n,
// else exactly n (not pooled; putFrameBuffer ignores it).
func frameBufferSize(n int) int {
	c := frameClass(n)
	if c < 0 {
		return n
	}
	if size := frameClassMin << c; size-n <= n/16 {
		return size
	}
	return n
}

// getFrameBuffer returns a buffer of n bytes: from the pool when n is a
// class's size (its contents are whatever an earlier frame left there),
// else allocated.
func getFrameBuffer(n int) []byte {
	c := frameClass(n)
	if c < 0 || frameClassMin<<c != n {
		return make([]byte, n)
	}
	if b, ok := framePools[c].Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, frameClassMin<<c)
}

// putFrameBuffer gives back a buffer from getFrameBuffer (nil: nothing).
// Its caller must not use it, nor any slice of it, afterwards.
func putFrameBuffer(b []byte) {
	if b == nil {
		return
	}
	c := frameClass(cap(b))
	if c < 0 || frameClassMin<<c != cap(b) {
		return // not one of the pool's sizes
	}
	b = b[:cap(b)]
	framePools[c].Put(&b)
}
