package test

// Reading replica logs straight from data directories, for the replication
// checker here (checker_test.go) and the container campaign (test/docker),
// which reads its brokers' volumes.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// RawBatch is one record batch as stored in a segment file.
type RawBatch struct {
	// Base and Last are the batch's first and last offsets.
	Base, Last int64
	// Epoch is the batch's partition leader epoch.
	Epoch int32
	// Bytes is the whole batch as stored.
	Bytes []byte
}

// batchHeaderLen is the v2 batch header's size: the smallest batch.
const batchHeaderLen = 61

// ReadReplicaBatches returns the batches of one replica's log directory in
// offset order. A segment's tail that holds no whole batch (preallocated
// zeros, a torn write) ends that segment.
func ReadReplicaBatches(dir string) ([]RawBatch, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names) // zero-padded base offsets
	var out []RawBatch
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, SegmentBatches(b)...)
	}
	return out, nil
}

// SegmentBatches splits one segment file's bytes into its whole batches;
// a tail that holds no whole batch (preallocated zeros, a torn write) ends
// it.
func SegmentBatches(b []byte) []RawBatch {
	var out []RawBatch
	for len(b) >= batchHeaderLen {
		size := int64(int32(binary.BigEndian.Uint32(b[8:12]))) + 12
		if size < batchHeaderLen || size > int64(len(b)) {
			break
		}
		base := int64(binary.BigEndian.Uint64(b))
		out = append(out, RawBatch{
			Base:  base,
			Last:  base + int64(int32(binary.BigEndian.Uint32(b[23:27]))),
			Epoch: int32(binary.BigEndian.Uint32(b[12:16])),
			Bytes: b[:size],
		})
		b = b[size:]
	}
	return out
}

// CompareReplicas checks one partition from its replicas' log directories
// (dirs, by broker id): on every replica, batch leader epochs never
// decrease and offsets are contiguous (CheckEpochs); the ISR members hold
// byte-identical batches below the high watermark hw.
func CompareReplicas(dirs map[int32]string, isr []int32, hw int64) error {
	ids := make([]int32, 0, len(dirs))
	for id := range dirs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var ref []byte
	refID := int32(-1)
	for _, r := range ids {
		batches, err := ReadReplicaBatches(dirs[r])
		if err != nil {
			return fmt.Errorf("replica %d: %v", r, err)
		}
		if err := CheckEpochs(dirs[r], batches); err != nil {
			return fmt.Errorf("replica %d: %v", r, err)
		}
		if !slices.Contains(isr, r) {
			continue
		}
		var below []byte
		reached := int64(0)
		for _, b := range batches {
			if b.Base >= hw {
				break
			}
			below = append(below, b.Bytes...)
			reached = b.Last + 1
		}
		if reached < hw {
			return fmt.Errorf("ISR member %d holds offsets up to %d, below the high watermark %d", r, reached, hw)
		}
		if ref == nil {
			ref, refID = below, r
			continue
		}
		if !bytes.Equal(below, ref) {
			return fmt.Errorf("ISR members %d and %d differ below the high watermark %d (%d and %d bytes, first difference at byte %d)",
				refID, r, hw, len(ref), len(below), firstDifference(ref, below))
		}
	}
	return nil
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// CheckEpochs checks that batch leader epochs never decrease along the log
// and that offsets are contiguous, and that the leader-epoch checkpoint in
// dir, if present, is strictly increasing in epoch and non-decreasing in
// start offset.
func CheckEpochs(dir string, batches []RawBatch) error {
	for i := 1; i < len(batches); i++ {
		if batches[i].Epoch < batches[i-1].Epoch {
			return fmt.Errorf("batch at offset %d has leader epoch %d after epoch %d", batches[i].Base, batches[i].Epoch, batches[i-1].Epoch)
		}
		if batches[i].Base != batches[i-1].Last+1 {
			return fmt.Errorf("batch at offset %d follows one ending at %d", batches[i].Base, batches[i-1].Last)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "leader-epoch-checkpoint"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	prevEpoch, prevStart := int64(-1), int64(-1)
	for _, line := range lines[min(2, len(lines)):] {
		f := strings.Fields(line)
		if len(f) != 2 {
			return fmt.Errorf("leader-epoch-checkpoint line %q", line)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		s, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e <= prevEpoch || s < prevStart {
			return fmt.Errorf("leader-epoch-checkpoint entry %q after epoch %d at %d", line, prevEpoch, prevStart)
		}
		prevEpoch, prevStart = e, s
	}
	return nil
}
