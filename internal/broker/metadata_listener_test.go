package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

// A partition whose leader has no endpoint for the client's listener:
// Metadata leaves that broker out of Brokers and reports no leader, with
// LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before), as Kafka's
// metadata cache does, rather than a node id the client has no address
// for; the controller id is one the client was told about.
func TestMetadataLeaderWithoutClientListener(t *testing.T) {
	s := recoverySnapshot(map[int32]byte{1: 'l', 2: 'l'}, meta.PartitionState{Leader: 2, LeaderEpoch: 1, ISR: []int32{1, 2}})
	s.ControllerID = 2
	b1 := s.Brokers[1]
	b1.Endpoints = []meta.Endpoint{
		{Listener: "INTERNAL", SecurityProtocol: "PLAINTEXT", Host: "b1", Port: 9091},
		{Listener: "CLIENT", SecurityProtocol: "PLAINTEXT", Host: "b1", Port: 9092},
	}
	s.Brokers[1] = b1
	b2 := s.Brokers[2]
	b2.Endpoints = []meta.Endpoint{{Listener: "INTERNAL", SecurityProtocol: "PLAINTEXT", Host: "b2", Port: 9091}}
	s.Brokers[2] = b2

	b := &Broker{cfg: DefaultConfig(), logger: quietLogger()}
	b.cfg.AutoCreateTopics = false
	b.partitions = &partitionManager{b: b}
	b.partitions.view.Store(s)

	for _, c := range []struct {
		version int16
		code    int16
	}{{12, kerr.ListenerNotFound.Code}, {5, kerr.LeaderNotAvailable.Code}} {
		mreq := kmsg.NewPtrMetadataRequest()
		mreq.Version = c.version
		topic := "t"
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &topic
		mreq.Topics = append(mreq.Topics, rt)
		resp := b.handleMetadata(context.Background(), &protocol.Request{Body: mreq, Version: c.version, Conn: &protocol.ConnInfo{Listener: "CLIENT"}})
		m := resp.Body.(*kmsg.MetadataResponse)
		if len(m.Brokers) != 1 || m.Brokers[0].NodeID != 1 {
			t.Fatalf("v%d: brokers %+v, want broker 1 alone", c.version, m.Brokers)
		}
		if m.ControllerID != 1 {
			t.Errorf("v%d: controller %d, want 1 (the controller, 2, has no CLIENT endpoint)", c.version, m.ControllerID)
		}
		if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: topics %+v", c.version, m.Topics)
		}
		if p := m.Topics[0].Partitions[0]; p.Leader != -1 || p.ErrorCode != c.code {
			t.Errorf("v%d: partition leader %d, error %v; want -1, %v", c.version, p.Leader, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(c.code))
		}
	}
}
