package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch v8 (KIP-709) asks for the offsets of several groups in one
// request, as sarama's ClusterAdmin.ListConsumerGroupOffsetsBatch does (it
// requires v8). Each group is answered as its own request would be.
func TestOffsetFetchGroupsBatch(t *testing.T) {
	b := StartBroker(t)
	e2eCreateTopic(testContext(t, 30*time.Second), t, b.Addr, "t", 2, nil)
	rc := dialBad(t, b.Addr)
	// FindCoordinator creates __consumer_offsets; the commits wait for its
	// partitions to be loaded.
	for _, g := range []string{"a", "b"} {
		WaitFor(t, 30*time.Second, func() error {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.Version, r.CoordinatorKey = 3, g
			if resp := rc.roundTrip(r).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 {
				return fmt.Errorf("FindCoordinator %s: error %d", g, resp.ErrorCode)
			}
			return nil
		})
	}
	commit := func(group string, partition int32, offset int64) error {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.Generation = 8, group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = partition, offset
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		resp := rc.roundTrip(r).(*kmsg.OffsetCommitResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return fmt.Errorf("commit %s t-%d: %+v", group, partition, resp)
		}
		return nil
	}
	WaitFor(t, 30*time.Second, func() error { return commit("a", 0, 5) })
	WaitFor(t, 30*time.Second, func() error { return commit("b", 1, 7) })

	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	group := func(name string, partitions ...int32) kmsg.OffsetFetchRequestGroup {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = name
		if partitions != nil {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = "t", partitions
			g.Topics = append(g.Topics, rt)
		}
		return g
	}
	// a: both partitions by name; b: every committed partition (Topics
	// null); c: a group with no offsets.
	req.Groups = append(req.Groups, group("a", 0, 1), group("b"), group("c", 0))
	resp := rc.roundTrip(req).(*kmsg.OffsetFetchResponse)

	type key struct {
		group     string
		partition int32
	}
	got := map[key]int64{}
	var groups []string
	for _, g := range resp.Groups {
		groups = append(groups, g.Group)
		if g.ErrorCode != 0 {
			t.Errorf("group %s: error %d", g.Group, g.ErrorCode)
		}
		for _, rt := range g.Topics {
			for _, p := range rt.Partitions {
				if rt.Topic != "t" || p.ErrorCode != 0 {
					t.Errorf("group %s: %s-%d error %d", g.Group, rt.Topic, p.Partition, p.ErrorCode)
				}
				got[key{g.Group, p.Partition}] = p.Offset
			}
		}
	}
	want := map[key]int64{{"a", 0}: 5, {"a", 1}: -1, {"b", 1}: 7, {"c", 0}: -1}
	if len(groups) != 3 || groups[0] != "a" || groups[1] != "b" || groups[2] != "c" || len(got) != len(want) {
		t.Fatalf("groups %v, offsets %v; want a, b, c with %v", groups, got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("group %s partition %d: offset %d, want %d", k.group, k.partition, got[k], w)
		}
	}
}
