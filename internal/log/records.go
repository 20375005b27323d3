package log

import "encoding/binary"

// offsetOfMaxTimestamp returns the offset of the first record of batch b
// (header h) whose timestamp is h.MaxTimestamp. Only uncompressed CreateTime
// batches can be walked without a codec; for the others it returns the
// batch's base offset, the earliest offset a consumer can fetch from and
// still see that record (with LogAppendTime every record carries the max
// timestamp, so the base offset is exact there).
func offsetOfMaxTimestamp(b []byte, h *BatchHeader) int64 {
	if h.Compression() != 0 || h.Attributes&AttrTimestampType != 0 {
		return h.BaseOffset
	}
	want := h.MaxTimestamp - h.BaseTimestamp
	rest := b[BatchHeaderSize:h.Size()]
	for range h.RecordCount {
		// A record: length varint, attributes int8, timestampDelta varlong,
		// offsetDelta varint, then key, value and headers we skip.
		length, n := binary.Varint(rest)
		if n <= 0 || length < 0 || length > int64(len(rest)-n) {
			break
		}
		rec := rest[n : n+int(length)]
		rest = rest[n+int(length):]
		if len(rec) < 1 {
			break
		}
		tsDelta, n1 := binary.Varint(rec[1:])
		if n1 <= 0 {
			break
		}
		offsetDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			break
		}
		if tsDelta == want {
			return h.BaseOffset + offsetDelta
		}
	}
	return h.BaseOffset
}
