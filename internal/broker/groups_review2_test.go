package broker

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/group"
	"github.com/samsa-io/samsa/internal/replica"
)

// After a failover whose new leader has an uncommitted tail and fewer
// in-sync replicas than min.insync.replicas, an OffsetFetch of a group
// whose records all lie below the tail is answered (as Kafka serves it):
// it waits for its own group's loaded records only, not for the whole
// loaded end, which cannot commit until the ISR grows back (it got
// UNSTABLE_OFFSET_COMMIT until then). The group in the tail still waits.
func TestGroupFetchAfterFailoverUnderMinISR(t *testing.T) {
	p := newOffsetsReplica(t)
	lead := func(epoch, pe int32, isr []int32, minISR int32) {
		if err := p.BecomeLeader(epoch, pe, isr, replica.LeaderConfig{Replicas: []int32{1, 2}, MinInsyncReplicas: minISR, ReplicaLagTimeMax: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	lead(1, 1, []int32{1}, 1)
	gcfg := group.DefaultConfig()
	gcfg.Partitions = 1
	gcfg.CommitTimeout = 100 * time.Millisecond
	c := group.New(gcfg)
	defer c.Close()
	elect := func(epoch int32) {
		c.Elected(0, epoch, 1, offsetsStore{lp: &localPartition{Partition: p}})
		for {
			if _, code := c.List(nil); code == 0 {
				break
			}
			runtime.Gosched()
		}
	}
	elect(1)
	commit := func(id string) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.Generation = 8, id, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 42
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return c.StartCommitOffsets(r)(context.Background()).Topics[0].Partitions[0].ErrorCode
	}
	fetch := func(id string) (int64, int16) {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Group = 7, id
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		r.Topics = append(r.Topics, rt)
		resp := c.StartFetchOffsets(r)(context.Background())
		pp := resp.Topics[0].Partitions[0]
		return pp.Offset, pp.ErrorCode
	}
	if code := commit("old"); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	// A follower joins the ISR but is slow: another group's commit stays
	// uncommitted.
	lead(1, 2, []int32{1, 2}, 1)
	t.Logf("in-flight commit of another group: %s", kerr.ErrorForCode(commit("other")))
	// Failover (a new leader epoch) with the follower gone and
	// min.insync.replicas 2.
	lead(2, 3, []int32{1}, 2)
	elect(2)
	off, code := fetch("old")
	t.Logf("OffsetFetch of group old (offset 42 committed before the tail): offset %d, %v", off, kerr.ErrorForCode(code))
	if off != 42 || code != 0 {
		t.Fatalf("a committed offset of a group with nothing in the uncommitted tail is not served")
	}
	off, code = fetch("other")
	t.Logf("OffsetFetch of group other (in the tail): offset %d, %v", off, kerr.ErrorForCode(code))
	if code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("the uncommitted offset of the tail was answered: %d, %v", off, kerr.ErrorForCode(code))
	}
}
