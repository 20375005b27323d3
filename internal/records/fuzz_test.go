package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
)

// fuzzCap is the decompression cap under fuzzing: small, so that a bomb
// the fuzzer finds costs little.
const fuzzCap = 64 << 10

// Fuzz modes, one bit each.
const (
	fuzzFixCRC = 1 << iota // recompute the CRC, so mutations reach the records
	fuzzCompacted
	fuzzLogAppendTime
)

func seedBatches(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, c := range allCodecs {
		seeds = append(seeds,
			build(f, batchSpec{codec: c.codec, records: recs(3, 30)}),
			build(f, idem(batchSpec{codec: c.codec, attrs: klog.AttrTransactional, records: []kmsg.Record{{}, {OffsetDelta: 1, Key: []byte{}, Headers: []kmsg.Header{{Key: "k"}}}}})),
		)
	}
	seeds = append(seeds,
		build(f, batchSpec{rawRecords: rawRecord(appendVarint([]byte{0, 0, 0, 1, 1}, 1_000_000)), count: 1}),
		build(f, batchSpec{rawRecords: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, count: 1}),
		bombBatch(f, codecSnappy, append(binary.AppendUvarint(nil, gib), 0, 0, 0, 0)),
		bombBatch(f, codecZstd, zstdLyingFrame(1<<40)),
		bombBatch(f, codecGzip, gzipMember(f, 2*fuzzCap)),
	)
	return seeds
}

// FuzzValidate: Validate never panics, every error has exactly one kind,
// and whatever passes is one batch whose records ForEachRecord can walk.
func FuzzValidate(f *testing.F) {
	for _, b := range seedBatches(f) {
		f.Add(b, uint8(0))
		f.Add(b, uint8(fuzzFixCRC|fuzzCompacted))
		f.Add(b, uint8(fuzzFixCRC|fuzzLogAppendTime))
	}
	f.Add([]byte{}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, mode uint8) {
		if mode&fuzzFixCRC != 0 && len(b) >= offRecords {
			b = fixCRC(bytes.Clone(b))
		}
		lim := testLimits()
		lim.MaxMessageBytes = 8 << 20
		lim.MaxDecompressedBytes = fuzzCap
		lim.Compacted = mode&fuzzCompacted != 0
		if mode&fuzzLogAppendTime != 0 {
			lim.TimestampType = LogAppendTime
		}
		orig := bytes.Clone(b)
		res, err := Validate(b, lim)
		if !bytes.Equal(b, orig) {
			t.Fatal("Validate changed its input")
		}
		if err != nil {
			kindOf(t, err)
			return
		}
		if res.Header.Size() != len(b) || res.RecordCount != res.Header.RecordCount || res.RecordCount <= 0 {
			t.Fatalf("accepted %d bytes as %+v", len(b), res)
		}
		if res.UncompressedBytes > fuzzCap {
			t.Fatalf("%d bytes decompressed past the cap", res.UncompressedBytes)
		}
		var n int32
		err = ForEachRecord(b, &res.Header, fuzzCap, func(r Record) bool {
			if r.OffsetDelta != n {
				t.Fatalf("record %d has offset delta %d after Validate passed", n, r.OffsetDelta)
			}
			n++
			return true
		})
		if err != nil || n != res.RecordCount {
			t.Fatalf("ForEachRecord: %d of %d records, %v", n, res.RecordCount, err)
		}
	})
}

// FuzzDecompress: each decoder never panics, never returns more than the
// limit nor holds a buffer past it, and fails only with ErrDecompress or
// ErrDecompressedTooLarge.
func FuzzDecompress(f *testing.F) {
	raw := payload(newRand(7), 3000)
	for _, c := range allCodecs[1:] {
		codec := c.codec
		if codec == codecXerial {
			codec = codecSnappy
		}
		f.Add(uint8(codec), compress(f, c.codec, raw))
	}
	f.Add(uint8(codecNone), raw)
	f.Add(uint8(codecGzip), gzipMember(f, 2*fuzzCap))
	f.Add(uint8(codecZstd), zstdLyingFrame(1<<40))
	f.Add(uint8(codecZstd), zstdStreamFrame(f, 2*fuzzCap))
	f.Add(uint8(codecLZ4), lz4Frame(f, 2*fuzzCap))
	f.Add(uint8(codecSnappy), xerialEncode(make([]byte, 2*fuzzCap), 32<<10))
	f.Add(uint8(codecSnappy), append(binary.AppendUvarint(nil, gib), 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, codec uint8, src []byte) {
		c := int(codec % 5) // none and the four codecs
		const limit = fuzzCap
		out, err := decompress(c, src, nil, limit)
		if len(out) > limit+1 || cap(out) > limit+1 {
			t.Fatalf("%s: %d bytes in a buffer of %d, limit %d", codecNames[c], len(out), cap(out), limit)
		}
		if err == nil {
			if len(out) > limit {
				t.Fatalf("%s: %d bytes accepted over the limit %d", codecNames[c], len(out), limit)
			}
			return
		}
		if errors.Is(err, ErrDecompress) == errors.Is(err, ErrDecompressedTooLarge) {
			t.Fatalf("%s: error %v is not exactly one of ErrDecompress, ErrDecompressedTooLarge", codecNames[c], err)
		}
	})
}
