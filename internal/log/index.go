package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// Sizes of the entries of the two index files.
const (
	offsetIndexEntrySize = 8  // relative offset uint32, position uint32
	timeIndexEntrySize   = 12 // timestamp int64, relative offset uint32
)

var errBadIndex = errors.New("log: index fails sanity check")

// offsetIndexEntry maps the base offset of a batch (relative to the segment's
// base offset) to the batch's position in the segment file.
type offsetIndexEntry struct {
	relOffset uint32
	position  uint32
}

// timeIndexEntry records that the largest timestamp of the batches up to and
// including the batch at relOffset is timestamp. Entries are added when the
// largest timestamp grows, so timestamps strictly increase.
type timeIndexEntry struct {
	timestamp int64
	relOffset uint32
}

func appendOffsetIndexEntry(b []byte, e offsetIndexEntry) []byte {
	b = binary.BigEndian.AppendUint32(b, e.relOffset)
	return binary.BigEndian.AppendUint32(b, e.position)
}

func appendTimeIndexEntry(b []byte, e timeIndexEntry) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.timestamp))
	return binary.BigEndian.AppendUint32(b, e.relOffset)
}

// decodeOffsetIndex parses an offset index file and checks it: whole
// entries, offsets and positions strictly increasing, positions inside the
// segment's logSize bytes.
func decodeOffsetIndex(b []byte, logSize int64) ([]offsetIndexEntry, error) {
	if len(b)%offsetIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: offset index size %d", errBadIndex, len(b))
	}
	entries := make([]offsetIndexEntry, len(b)/offsetIndexEntrySize)
	for i := range entries {
		e := offsetIndexEntry{
			relOffset: binary.BigEndian.Uint32(b[i*offsetIndexEntrySize:]),
			position:  binary.BigEndian.Uint32(b[i*offsetIndexEntrySize+4:]),
		}
		if int64(e.position) >= logSize ||
			i > 0 && (e.relOffset <= entries[i-1].relOffset || e.position <= entries[i-1].position) {
			return nil, fmt.Errorf("%w: offset index entry %d (%d, %d)", errBadIndex, i, e.relOffset, e.position)
		}
		entries[i] = e
	}
	return entries, nil
}

// decodeTimeIndex parses a time index file and checks it: whole entries,
// timestamps strictly increasing, offsets not decreasing and below
// maxRelOffset.
func decodeTimeIndex(b []byte, maxRelOffset int64) ([]timeIndexEntry, error) {
	if len(b)%timeIndexEntrySize != 0 {
		return nil, fmt.Errorf("%w: time index size %d", errBadIndex, len(b))
	}
	entries := make([]timeIndexEntry, len(b)/timeIndexEntrySize)
	for i := range entries {
		e := timeIndexEntry{
			timestamp: int64(binary.BigEndian.Uint64(b[i*timeIndexEntrySize:])),
			relOffset: binary.BigEndian.Uint32(b[i*timeIndexEntrySize+8:]),
		}
		if e.timestamp < 0 || int64(e.relOffset) > maxRelOffset ||
			i > 0 && (e.timestamp <= entries[i-1].timestamp || e.relOffset < entries[i-1].relOffset) {
			return nil, fmt.Errorf("%w: time index entry %d (%d, %d)", errBadIndex, i, e.timestamp, e.relOffset)
		}
		entries[i] = e
	}
	return entries, nil
}

// floorOffsetEntry returns the index of the last entry whose relative offset
// is <= rel, or -1.
func floorOffsetEntry(entries []offsetIndexEntry, rel uint32) int {
	return sort.Search(len(entries), func(i int) bool { return entries[i].relOffset > rel }) - 1
}

// lastTimeEntryBelow returns the index of the last entry whose timestamp is
// < ts, or -1.
func lastTimeEntryBelow(entries []timeIndexEntry, ts int64) int {
	return sort.Search(len(entries), func(i int) bool { return entries[i].timestamp >= ts }) - 1
}
