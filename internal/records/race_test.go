//go:build race

package records

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts mean nothing, and it slows the codecs tenfold.
const raceEnabled = true
