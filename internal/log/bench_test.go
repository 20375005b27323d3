package log

import (
	"fmt"
	"path/filepath"
	"testing"
)

// Benchmarks run on the OS file system (b.TempDir), over record size ×
// records per batch (STYLE habit 14). Run them with
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/log

var benchShapes = []struct{ recordSize, records int }{{100, 1}, {100, 100}, {1024, 1}, {1024, 100}}

func benchConfig(b *testing.B) Config {
	cfg := DefaultConfig()
	cfg.Logger = quietLogger
	cfg.SegmentBytes = 64 << 20
	cfg.RetentionBytes = 256 << 20 // bound the disk a long run uses
	return cfg
}

// BenchmarkAppend measures Append of one pre-built batch per operation.
// sync/flushEvery=N calls Flush after every N appends, as a broker in sync
// mode does when N produce requests arrive during one fsync (group
// commit); sync/parallel has every goroutine append then Flush, sharing
// fsyncs (16 goroutines); pagecache flushes only when NeedsFlush says so
// (flush.messages=10000).
func BenchmarkAppend(b *testing.B) {
	modes := []struct {
		name          string
		flushEvery    int
		parallel      bool
		flushMessages int64
	}{
		{"sync/flushEvery=1", 1, false, 1},
		{"sync/flushEvery=16", 16, false, 1},
		{"sync/parallel", 1, true, 1},
		{"pagecache", 0, false, 10000},
	}
	for _, mode := range modes {
		for _, shape := range benchShapes {
			b.Run(fmt.Sprintf("%s/record=%d/batch=%d", mode.name, shape.recordSize, shape.records), func(b *testing.B) {
				cfg := benchConfig(b)
				cfg.FlushMessages = mode.flushMessages
				l, err := Open(filepath.Join(b.TempDir(), "p"), cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				batch := newBatch(shape.records, shape.recordSize, 1_700_000_000_000).encode()
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				b.ResetTimer()
				if mode.parallel {
					b.SetParallelism(8) // 16 producers on this 2-core machine
					b.RunParallel(func(pb *testing.PB) {
						own := newBatch(shape.records, shape.recordSize, 1_700_000_000_000).encode()
						for pb.Next() {
							if _, err := l.Append(own, 0); err != nil {
								b.Error(err)
								return
							}
							if err := l.Flush(); err != nil {
								b.Error(err)
								return
							}
						}
					})
					return
				}
				for i := range b.N {
					if _, err := l.Append(batch, 0); err != nil {
						b.Fatal(err)
					}
					switch {
					case mode.flushEvery > 0 && (i+1)%mode.flushEvery == 0:
						err = l.Flush()
					case mode.flushEvery == 0 && l.NeedsFlush():
						err = l.Flush()
					}
					if err != nil {
						b.Fatal(err)
					}
					if i%4096 == 4095 {
						b.StopTimer()
						if _, err := l.EnforceRetention(); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
				}
			})
		}
	}
}

// BenchmarkRead measures fetch-style reads of up to 1 MiB from a log of
// about 64 MiB in 16 MiB segments, walking it front to back.
func BenchmarkRead(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(fmt.Sprintf("record=%d/batch=%d", shape.recordSize, shape.records), func(b *testing.B) {
			cfg := benchConfig(b)
			cfg.SegmentBytes = 16 << 20
			cfg.FlushMessages = 1 << 40
			l, err := Open(filepath.Join(b.TempDir(), "p"), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			batch := newBatch(shape.records, shape.recordSize, 1_700_000_000_000).encode()
			for l.Size() < 64<<20 {
				if _, err := l.Append(batch, 0); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Flush(); err != nil {
				b.Fatal(err)
			}
			const fetchBytes = 1 << 20
			perRead := fetchBytes / len(batch) * len(batch)
			leo := l.EndOffset()
			b.SetBytes(int64(perRead))
			b.ReportAllocs()
			b.ResetTimer()
			offset := int64(0)
			for range b.N {
				out, err := l.Read(offset, leo, fetchBytes, true)
				if err != nil {
					b.Fatal(err)
				}
				if len(out) < perRead {
					offset = 0 // the end of the log: start over
					continue
				}
				offset += int64(len(out) / len(batch) * shape.records)
			}
		})
	}
}
