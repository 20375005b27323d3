package records

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
)

// TestDecompressRecords checks DecompressRecords against the uncompressed
// records for every codec, and its errors.
func TestDecompressRecords(t *testing.T) {
	raw := encodeRecords(recs(20, 300))
	for _, c := range allCodecs {
		b := build(t, batchSpec{codec: c.codec, rawRecords: raw, count: 20})
		h := header(t, b)
		got, err := DecompressRecords(&h, b)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("%s: %d bytes, %v; want the %d raw bytes", c.name, len(got), err, len(raw))
		}
	}
	b := build(t, batchSpec{codec: codecGzip, records: recs(1, 10)})
	h := header(t, b)
	h.Attributes |= 5
	if _, err := DecompressRecords(&h, b); !errors.Is(err, ErrUnsupportedCompression) {
		t.Fatalf("codec 5: %v", err)
	}
	h = header(t, b)
	if _, err := DecompressRecords(&h, b[:len(b)-1]); !errors.Is(err, ErrBadLength) {
		t.Fatalf("short batch: %v", err)
	}
	b = bombBatch(t, codecGzip, gzipMember(t, DefaultMaxDecompressedBytes+1))
	h = header(t, b)
	if _, err := DecompressRecords(&h, b); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Fatalf("bomb: %v", err)
	}
	b = bombBatch(t, codecGzip, []byte("not gzip"))
	h = header(t, b)
	if _, err := DecompressRecords(&h, b); !errors.Is(err, ErrDecompress) {
		t.Fatalf("garbage: %v", err)
	}
}

// TestCompactWithDecompressRecords compacts a log of batches in every codec
// with DecompressRecords, as the broker does, and reads the result back
// with ForEachRecord.
func TestCompactWithDecompressRecords(t *testing.T) {
	cfg := klog.DefaultConfig()
	cfg.FS = klog.NewMemFS(1)
	cfg.SegmentBytes = 4096
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := klog.Open("/data/t-0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	latest := map[string]string{}
	for i := range 200 {
		var rs []kmsg.Record
		for j := range 1 + i%4 {
			key := fmt.Sprintf("k%d", (i*7+j*3)%23)
			value := fmt.Sprintf("v%d-%d", i, j)
			rs = append(rs, kmsg.Record{OffsetDelta: int32(j), Key: []byte(key), Value: []byte(value)})
			latest[key] = value
		}
		codec := []int{codecNone, codecGzip, codecSnappy, codecLZ4, codecZstd, codecXerial}[i%6]
		if _, err := l.Append(build(t, batchSpec{codec: codec, records: rs}), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Roll, so that every keyed batch above is in a closed segment.
	for l.NumSegments() < 2 || l.EndOffset() < 1000 {
		if _, err := l.Append(build(t, batchSpec{records: []kmsg.Record{{Key: fmt.Appendf(nil, "f%d", l.EndOffset()), Value: make([]byte, 100)}}}), 0); err != nil {
			t.Fatal(err)
		}
	}
	read := func() (records map[string]int, values map[string]string, compressed int) {
		b, err := l.Read(0, l.EndOffset(), 1<<30, true)
		if err != nil {
			t.Fatal(err)
		}
		records, values = map[string]int{}, map[string]string{}
		for len(b) > 0 {
			h, err := klog.ParseBatchHeader(b)
			if err == nil {
				err = klog.VerifyCRC(b, &h)
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Compression() != codecNone {
				compressed++
			}
			err = ForEachRecord(b, &h, 0, func(r Record) bool {
				records[string(r.Key)]++
				values[string(r.Key)] = string(r.Value)
				return true
			})
			if err != nil {
				t.Fatalf("batch %d: %v", h.BaseOffset, err)
			}
			b = b[h.Size():]
		}
		return records, values, compressed
	}
	_, _, compressedBefore := read()
	stats, err := l.Compact(klog.CompactOptions{UpperBound: l.EndOffset(), DeleteRetentionMs: -1, Decompress: DecompressRecords})
	if err != nil {
		t.Fatal(err)
	}
	if stats.CompressedRewritten == 0 || stats.UndecodableBatches != 0 {
		t.Fatalf("stats %+v", stats)
	}
	records, values, compressedAfter := read()
	for key, value := range latest {
		if records[key] != 1 || values[key] != value {
			t.Fatalf("key %s: %d records, last %q; want one, %q", key, records[key], values[key], value)
		}
	}
	if compressedAfter == 0 || compressedAfter >= compressedBefore {
		t.Fatalf("%d compressed batches before compaction, %d after", compressedBefore, compressedAfter)
	}
	t.Logf("stats %+v; compressed batches %d -> %d", stats, compressedBefore, compressedAfter)
}
