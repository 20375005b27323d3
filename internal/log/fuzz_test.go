package log

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// FuzzRecover damages the files of a log that holds valid batches, as the
// fuzzer's input says, and reopens it. Recovery must not panic or fail, the
// log must serve only whole CRC-valid batches that are a prefix of the
// original ones, and appends must work afterwards.
//
// The input is a list of 4-byte operations: file, kind, a, b. A flipped
// byte can hide anywhere, so it also drops the recovery point (an unclean
// shutdown, where recovery verifies every batch); cuts and appended bytes
// model torn writes at the tail and keep it.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 128, 0})                  // cut the first file in half
	f.Add([]byte{1, 1, 40, 7})                   // flip a byte
	f.Add([]byte{2, 2, 16, 0, 0, 0, 0, 0})       // append zeros
	f.Add([]byte{3, 3, 10, 200, 4, 0, 250, 255}) // zero a range, then cut
	f.Add([]byte{5, 2, 30, 1, 9, 9, 9, 9, 5, 1, 3, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := NewMemFS(1)
		clock := newFakeClock()
		cfg := testConfig(m, clock)
		cfg.SegmentBytes = 700
		cfg.IndexIntervalBytes = 100
		l, err := Open("/p", cfg)
		if err != nil {
			t.Fatal(err)
		}
		var original [][]byte
		for i := range 9 {
			b := newBatch(1+i%4, 20*i, clock.Ms()+int64(i)).producer(int64(i%2), 0, int32(0)).encode()
			if i >= 2 {
				// Keep the producers' sequences in order.
				b = newBatch(1+i%4, 20*i, clock.Ms()+int64(i)).encode()
			}
			info, err := l.Append(b, int32(i/3))
			if err != nil {
				t.Fatal(err)
			}
			original = append(original, stored(b, info.FirstOffset, int32(i/3)))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		names, _ := m.ReadDir("/p")
		var targets []string
		for _, n := range names {
			if n != recoveryPointFile && n != logStartOffsetFile {
				targets = append(targets, n)
			}
		}
		unclean := false
		for ; len(ops) >= 4; ops = ops[4:] {
			name := "/p/" + targets[int(ops[0])%len(targets)]
			b, _ := m.ReadFile(name)
			a, v := int(ops[2]), ops[3]
			switch ops[1] % 4 {
			case 0: // cut
				b = b[:len(b)*a/256]
			case 1: // flip
				if len(b) > 0 {
					b[(a*256+int(v))%len(b)] ^= v | 1
					unclean = true
				}
			case 2: // append
				n := min(a%64, len(ops)-4)
				b = append(b, ops[4:4+n]...)
			case 3: // zero a range
				if len(b) > 0 {
					from := (a * len(b)) / 256
					clear(b[from:min(len(b), from+int(v))])
					unclean = unclean || !strings.HasSuffix(name, logSuffix) || from+int(v) < len(b)
				}
			}
			writeMemFile(t, m, name, b)
		}
		if unclean {
			m.Remove("/p/" + recoveryPointFile)
		}

		l, err = Open("/p", cfg)
		if err != nil {
			t.Fatalf("Open after damage: %v", err)
		}
		defer l.Close()
		got, err := l.Read(l.StartOffset(), l.EndOffset(), 1<<20, true)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		n := len(splitBatches(t, got)) // fails on anything but whole CRC-valid batches
		// The partition leader epoch lies outside the CRC: a flip there goes
		// unnoticed, as in Kafka. Compare the rest.
		if n > len(original) || !bytes.Equal(maskEpochs(got), maskEpochs(concat(original[:n]...))) {
			t.Fatalf("recovered %d batches that are not a prefix of the original %d", n, len(original))
		}
		if l.EndOffset() != nextOffsetAfter(original[:n]) {
			t.Fatalf("LEO %d after recovering %d batches", l.EndOffset(), n)
		}
		// (A flipped epoch field may have raised the latest epoch.)
		if _, err := l.Append(newBatch(2, 10, clock.Ms()).encode(), max(5, l.LatestEpoch())); err != nil {
			t.Fatalf("Append after recovery: %v", err)
		}
	})
}

// maskEpochs zeroes the partition leader epoch of every batch in b.
func maskEpochs(b []byte) []byte {
	b = bytes.Clone(b)
	for rest := b; len(rest) >= BatchHeaderSize; {
		h, _ := ParseBatchHeader(rest)
		SetPartitionLeaderEpoch(rest, 0)
		rest = rest[h.Size():]
	}
	return b
}

func nextOffsetAfter(batches [][]byte) int64 {
	if len(batches) == 0 {
		return 0
	}
	h, _ := ParseBatchHeader(batches[len(batches)-1])
	return h.NextOffset()
}

// writeMemFile replaces a MemFS file's contents (durably).
func writeMemFile(t *testing.T, m *MemFS, name string, b []byte) {
	t.Helper()
	f, err := m.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
}
