//go:build race

package test

// raceEnabled: the race detector slows the garbage collector's marking, so
// the heap overshoots its goal further under a fast allocator.
const raceEnabled = true
