package records

import (
	"fmt"
	"testing"

	klog "github.com/samsa-io/samsa/internal/log"
)

// BenchmarkValidate runs Validate over batches of 100 records of 100 B and
// 1 KiB, uncompressed and compressed by franz-go's own compressor. SetBytes
// is the wire size of the batch, so MB/s is what the produce path sees;
// ns/record is reported beside it.
func BenchmarkValidate(b *testing.B) {
	codecs := []struct {
		name  string
		codec int
	}{{"none", codecNone}, {"lz4", codecLZ4}, {"zstd", codecZstd}, {"snappy", codecSnappy}, {"gzip", codecGzip}}
	for _, c := range codecs {
		for _, size := range []int{100, 1024} {
			b.Run(fmt.Sprintf("%s/100x%dB", c.name, size), func(b *testing.B) {
				batch := build(b, batchSpec{codec: c.codec, records: recs(100, size)})
				lim := testLimits()
				if _, err := Validate(batch, lim); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := Validate(batch, lim); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/record")
			})
		}
	}
}

// BenchmarkForEachRecord is the ListOffsets-by-timestamp scan of a whole
// stored batch.
func BenchmarkForEachRecord(b *testing.B) {
	for _, c := range []int{codecNone, codecZstd} {
		b.Run(codecNames[c], func(b *testing.B) {
			batch := build(b, batchSpec{codec: c, records: recs(100, 1024)})
			h, err := klog.ParseBatchHeader(batch)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			var n int
			for b.Loop() {
				if err := ForEachRecord(batch, &h, 0, func(r Record) bool { n += len(r.Value); return true }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
