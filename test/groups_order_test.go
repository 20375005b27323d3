package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
)

// TestGroupRequestsInArrivalOrder (issue 16): group requests pipelined on
// one connection take effect in the order they arrive, whichever of them
// wait for a write. A commit followed at once by an OffsetFetch (the Java
// consumer's commitAsync() then committed()) reads the new offset; a
// member's commit followed at once by its LeaveGroup is accepted, and so
// is the leave.
func TestGroupRequestsInArrivalOrder(t *testing.T) {
	b := StartBroker(t, func(c *broker.Config) {
		c.Groups.Partitions = 1
		c.Groups.InitialRebalanceDelay = 0
	})
	// Offsets are committed only for partitions that exist (as in Kafka).
	e2eCreateTopic(testContext(t, 30*time.Second), t, b.Addr, "t", 1, nil)
	rc := dialBad(t, b.Addr)
	const group = "order"
	fetch := func() *kmsg.OffsetFetchRequest {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Group = 7, group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		r.Topics = append(r.Topics, rt)
		return r
	}
	commit := func(member string, gen int32, offset int64) *kmsg.OffsetCommitRequest {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = 8, group, member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
	commitCode := func(r kmsg.Response) int16 {
		cr := r.(*kmsg.OffsetCommitResponse)
		if len(cr.Topics) != 1 || len(cr.Topics[0].Partitions) != 1 {
			t.Fatalf("commit response: %+v", cr)
		}
		return cr.Topics[0].Partitions[0].ErrorCode
	}
	fetched := func(r kmsg.Response) (int64, error) {
		fr := r.(*kmsg.OffsetFetchResponse)
		if fr.ErrorCode != 0 {
			return 0, fmt.Errorf("OffsetFetch: error %d", fr.ErrorCode)
		}
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("OffsetFetch response: %+v", fr)
		}
		return fr.Topics[0].Partitions[0].Offset, nil
	}
	// pipeline sends reqs in one write and reads their responses.
	pipeline := func(reqs ...kmsg.Request) []kmsg.Response {
		t.Helper()
		var buf []byte
		var corrs []int32
		for _, r := range reqs {
			buf = append(buf, rc.frame(r)...)
			corrs = append(corrs, rc.corr)
		}
		rc.write(buf)
		out := make([]kmsg.Response, len(reqs))
		for i, r := range reqs {
			out[i] = rc.readResponse(r, corrs[i])
		}
		return out
	}

	// The coordinator is ready (__consumer_offsets created and loaded).
	WaitFor(t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKey = 3, group
		if code := rc.roundTrip(fc).(*kmsg.FindCoordinatorResponse).ErrorCode; code != 0 {
			return fmt.Errorf("FindCoordinator: error %d", code)
		}
		_, err := fetched(rc.roundTrip(fetch()))
		return err
	})

	// A simple consumer's commit, then its OffsetFetch.
	for i := int64(1); i <= 20; i++ {
		rs := pipeline(commit("", -1, i), fetch())
		if code := commitCode(rs[0]); code != 0 {
			t.Fatalf("commit %d: error %d", i, code)
		}
		got, err := fetched(rs[1])
		if err != nil || got != i {
			t.Fatalf("OffsetFetch pipelined after the commit of %d: offset %d, %v", i, got, err)
		}
	}

	// A member: joins, syncs, commits and leaves, the last two pipelined.
	for i := int64(1); i <= 5; i++ {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Version, join.Group, join.ProtocolType = 5, group, "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		join.Protocols = append(join.Protocols, p)
		jr := rc.roundTrip(join).(*kmsg.JoinGroupResponse)
		join.MemberID = jr.MemberID
		jr = rc.roundTrip(join).(*kmsg.JoinGroupResponse)
		if jr.ErrorCode != 0 || jr.LeaderID != jr.MemberID {
			t.Fatalf("JoinGroup: %+v", jr)
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Version, sync.Group, sync.MemberID, sync.Generation = 3, group, jr.MemberID, jr.Generation
		if code := rc.roundTrip(sync).(*kmsg.SyncGroupResponse).ErrorCode; code != 0 {
			t.Fatalf("SyncGroup: error %d", code)
		}
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Version, leave.Group = 4, group
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = jr.MemberID
		leave.Members = append(leave.Members, lm)
		rs := pipeline(commit(jr.MemberID, jr.Generation, 100+i), leave, fetch())
		if code := commitCode(rs[0]); code != 0 {
			t.Fatalf("member's commit pipelined before its LeaveGroup: error %d", code)
		}
		lr := rs[1].(*kmsg.LeaveGroupResponse)
		if lr.ErrorCode != 0 || len(lr.Members) != 1 || lr.Members[0].ErrorCode != 0 {
			t.Fatalf("LeaveGroup: %+v", lr)
		}
		if got, err := fetched(rs[2]); err != nil || got != 100+i {
			t.Fatalf("OffsetFetch after the member's commit and leave: offset %d, %v", got, err)
		}
	}
}
