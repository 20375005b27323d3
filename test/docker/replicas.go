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
	dirs := map[int32]string{}
	for _, n := range c.Nodes {
		dirs[n.ID] = n.DataDir()
	}
	deadline := time.Now().Add(timeout)
	for {
		err := c.compareReplicas(topic, partitions, dirs)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *Cluster) compareReplicas(topic string, partitions int32, dataDirs map[int32]string) error {
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
		dirs := map[int32]string{}
		for _, r := range st.Replicas {
			dirs[r] = filepath.Join(dataDirs[r], "logs", fmt.Sprintf("%s-%d", topic, p))
		}
		if err := samsatest.CompareReplicas(dirs, st.ISR, end.Offset); err != nil {
			return fmt.Errorf("%s/%d (ISR %v, high watermark %d): %w", topic, p, st.ISR, end.Offset, err)
		}
	}
	return nil
}
