package test

// Error codes against Kafka's behaviour (issue 15): each case sends one
// request as a client would and checks the code Kafka answers it with
// (cited from Kafka's request handling where the behaviour is not obvious).

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestErrorCodes(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "error-codes"
	e2eCreateTopic(ctx, t, b.Addr, topic, 1, nil)

	fetch := func(sessionID, sessionEpoch int32) *kmsg.FetchRequest {
		r := kmsg.NewPtrFetchRequest()
		r.SetVersion(11)
		r.ReplicaID = -1
		r.MaxBytes = 1 << 20
		r.SessionID, r.SessionEpoch = sessionID, sessionEpoch
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		fp.CurrentLeaderEpoch = -1
		ft.Partitions = append(ft.Partitions, fp)
		r.Topics = append(r.Topics, ft)
		return r
	}
	// A full fetch: the top-level code, and the topic answered in full.
	fullFetch := func(t *testing.T, resp kmsg.Response) {
		r := resp.(*kmsg.FetchResponse)
		if r.ErrorCode != 0 {
			t.Fatalf("error code %d (%v), want a full response", r.ErrorCode, kerr.ErrorForCode(r.ErrorCode))
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("topics %+v, want %s partition 0 without error", r.Topics, topic)
		}
	}
	topLevel := func(want int16) func(*testing.T, kmsg.Response) {
		return func(t *testing.T, resp kmsg.Response) {
			if got := resp.(*kmsg.FetchResponse).ErrorCode; got != want {
				t.Fatalf("error code %d (%v), want %d (%v)", got, kerr.ErrorForCode(got), want, kerr.ErrorForCode(want))
			}
		}
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(5)
	join.Group = ""
	join.SessionTimeoutMillis = 10000
	join.RebalanceTimeoutMillis = 10000
	join.ProtocolType = "consumer"
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	join.Protocols = append(join.Protocols, jp)
	// GroupCoordinator.handleJoinGroup validates the group id (and the
	// coordinator) before the session timeout: kafka-go's suite sends an
	// all-zero JoinGroup v1.
	emptyJoin := kmsg.NewPtrJoinGroupRequest()
	emptyJoin.SetVersion(1)
	invalidGroupID := func(t *testing.T, resp kmsg.Response) {
		if got := resp.(*kmsg.JoinGroupResponse).ErrorCode; got != kerr.InvalidGroupID.Code {
			t.Fatalf("error code %d (%v), want INVALID_GROUP_ID", got, kerr.ErrorForCode(got))
		}
	}

	for _, tc := range []struct {
		name  string
		req   kmsg.Request
		check func(*testing.T, kmsg.Response)
	}{
		// FetchManager.newContext: epoch 0 (INITIAL) or -1 (FINAL) is a
		// full fetch, whatever the session id (a given id is closed);
		// kafka-go sends id -1, epoch -1.
		{"fetch, session id -1, epoch -1 (kafka-go)", fetch(-1, -1), fullFetch},
		{"fetch, session id 0, epoch -1", fetch(0, -1), fullFetch},
		{"fetch, session id 0, epoch 0 (new session)", fetch(0, 0), fullFetch},
		{"fetch, unknown session id 7, epoch 0", fetch(7, 0), fullFetch},
		// Any other epoch names a session that must exist.
		{"fetch, unknown session id 7, epoch 1", fetch(7, 1), topLevel(kerr.FetchSessionIDNotFound.Code)},
		{"fetch, session id 0, epoch 1", fetch(0, 1), topLevel(kerr.FetchSessionIDNotFound.Code)},
		{"join group with an empty group id", join, invalidGroupID},
		{"join group with nothing set", emptyJoin, invalidGroupID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialBad(t, b.Addr)
			tc.check(t, c.roundTrip(tc.req))
		})
	}
}
