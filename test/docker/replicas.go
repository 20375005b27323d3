package docker

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	samsatest "github.com/samsa-io/samsa/test"
)

// CheckReplicas checks the replication invariants on the brokers' data
// volumes (samsatest.CompareReplicas): on every replica of every partition
// of topic, leader epochs never decrease and offsets are contiguous, and
// the ISR members hold byte-identical batches below the high watermark.
// Followers may still be copying the last batches, so it tries until the
// check passes or timeout, and returns the last failure. Call it once the
// writers have stopped and every ISR is full.
func (c *Cluster) CheckReplicas(topic string, partitions int32, timeout time.Duration) error {
	c.t.Helper()
	return c.checkPartitions(topic, partitions, timeout, func(p int32, st PartitionState, hw int64, replicaDir func(int32) string) error {
		dirs := map[int32]string{}
		for _, r := range st.Replicas {
			dirs[r] = replicaDir(r)
		}
		if err := samsatest.CompareReplicas(dirs, st.ISR, hw); err != nil {
			return fmt.Errorf("%s/%d (ISR %v, high watermark %d): %w", topic, p, st.ISR, hw, err)
		}
		return nil
	})
}

// checkPartitions runs check on every partition of topic, with its state,
// its high watermark and where each replica's log lies in the data
// volumes, until it passes for all of them or timeout passes (the last
// error then).
func (c *Cluster) checkPartitions(topic string, partitions int32, timeout time.Duration,
	check func(p int32, st PartitionState, hw int64, replicaDir func(int32) string) error) error {
	dataDirs := map[int32]string{}
	for _, n := range c.Nodes {
		dataDirs[n.ID] = n.DataDir()
	}
	replicaDir := func(p int32) func(int32) string {
		return func(r int32) string { return filepath.Join(dataDirs[r], "logs", fmt.Sprintf("%s-%d", topic, p)) }
	}
	once := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		ends, err := c.Admin().ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return fmt.Errorf("end offsets of %s: %w", topic, err)
		}
		for p := range partitions {
			var st PartitionState
			var err error
			for _, n := range c.Nodes {
				if st, err = n.Partition(topic, p); err == nil {
					break
				}
			}
			if err != nil {
				return err
			}
			end, ok := ends.Lookup(topic, p)
			if !ok {
				return fmt.Errorf("%s/%d: no end offset", topic, p)
			}
			if err := check(p, st, end.Offset, replicaDir(p)); err != nil {
				return err
			}
		}
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		err := once()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}
