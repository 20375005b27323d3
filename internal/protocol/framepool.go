package protocol

import (
	"math/bits"
	"sync"
)

// Large Produce frames are read into pooled buffers: a producer at full
// speed sends a request of about 1 MB after another, and allocating each
// afresh cost a third of the broker's time in page faults, zeroing and
// garbage collection (docs/performance.md). The buffers come in classes
// from frameClassMin to frameClassMax, sixteen to each doubling (64 KiB,
// then 68, 72, ... 128 KiB, 136 KiB, ...), so that any frame in that range
// fits a class's buffer that is at most a sixteenth larger than it: the
// last step of a frame's buffer, of the frame's own size, comes from the
// pool too, not only the power-of-two steps before it (which allocated a
// frame of, say, 6 MB afresh each time, zeroed, and collected). Larger
// frames, and the buffers of other requests, are allocated as before. The
// pool holds only buffers nobody references, and sync.Pool lets the
// garbage collector take them back, so it pins no memory beyond the next
// collections.
const (
	frameClassMin = smallFrame // 64 KiB
	frameClassMax = 16 << 20   // 16 MiB
	// frameClassSteps is the number of classes to each doubling: a
	// class's buffer is at most 1/frameClassSteps larger than the
	// smallest frame it is taken for.
	frameClassSteps = 16
	frameClassBits  = 4 // log2(frameClassSteps)
	minClassShift   = 16
	frameClasses    = (24-minClassShift)*frameClassSteps + 1 // up to log2(frameClassMax)
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
	// 2^e < n <= 2^(e+1); the classes of that doubling are 2^e + j·2^e/16
	// for j = 1..16.
	e := bits.Len(uint(n-1)) - 1
	step := 1 << (e - frameClassBits)
	j := (n - 1<<e + step - 1) / step
	return (e-minClassShift)*frameClassSteps + j
}

// frameClassSize returns the size of class c's buffers.
func frameClassSize(c int) int {
	if c == 0 {
		return frameClassMin
	}
	e := minClassShift + (c-1)/frameClassSteps
	j := (c-1)%frameClassSteps + 1
	return 1<<e + j<<(e-frameClassBits)
}

// isClassSize reports whether n is the size of a class's buffers.
func isClassSize(n int) bool {
	c := frameClass(n)
	return c >= 0 && frameClassSize(c) == n
}

// frameBufferSize is the size of the buffer readFrame takes for n bytes of
// a Produce frame: its class's if that wastes at most a sixteenth of n
// (every class above frameClassMin), else exactly n (not pooled;
// putFrameBuffer ignores it).
func frameBufferSize(n int) int {
	c := frameClass(n)
	if c < 0 {
		return n
	}
	if size := frameClassSize(c); size-n <= n/frameClassSteps {
		return size
	}
	return n
}

// getFrameBuffer returns a buffer of n bytes: from the pool when n is a
// class's size (its contents are whatever an earlier frame left there),
// else allocated.
func getFrameBuffer(n int) []byte {
	if !isClassSize(n) {
		return make([]byte, n)
	}
	if b, ok := framePools[frameClass(n)].Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, n)
}

// putFrameBuffer gives back a buffer from getFrameBuffer (nil: nothing).
// Its caller must not use it, nor any slice of it, afterwards.
func putFrameBuffer(b []byte) {
	if b == nil {
		return
	}
	if !isClassSize(cap(b)) {
		return // not one of the pool's sizes
	}
	b = b[:cap(b)]
	framePools[frameClass(cap(b))].Put(&b)
}
