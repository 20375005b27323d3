package broker

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

// aclTestBroker is a broker with ACL authorization on, the given ACLs
// in etcd and its cache, and topic "t" (led elsewhere) in its view.
func aclTestBroker(t *testing.T, acls []meta.ACL) *Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := startTestEtcd(t)
	cl, err := coord.Connect(ctx, e.Endpoints(), "acltest", coord.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if len(acls) > 0 {
		if err := cl.CreateACLs(ctx, acls); err != nil {
			t.Fatal(err)
		}
	}
	cache, err := cl.NewCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	if err := cache.WaitRevision(ctx, cl.LastRevision()); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID = 1
	cfg.Authorizer = authorizerClasses[0]
	b := &Broker{cfg: cfg, logger: quietLogger(), client: cl, cache: cache}
	b.partitions = &partitionManager{b: b}
	b.partitions.view.Store(recoverySnapshot(map[int32]byte{1: 'l', 2: 'l'}, meta.PartitionState{Leader: 2, LeaderEpoch: 1, ISR: []int32{1, 2}}))
	return b
}

func aclTestACL(typ meta.ResourceType, name, principal, host string, op meta.Operation, perm meta.Permission) meta.ACL {
	return meta.ACL{ResourceType: typ, ResourceName: name, PatternType: meta.PatternLiteral, Principal: principal,
		Host: host, Operation: op, Permission: perm}
}

func aclTestListOffsets(b *Broker, conn *protocol.ConnInfo) int16 {
	r := kmsg.NewPtrListOffsetsRequest()
	r.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	resp := b.handleListOffsets(context.Background(), &protocol.Request{Body: r, Version: 7, Conn: conn})
	return resp.Body.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
}

// Kafka matches an ACL's host against the client's address as Java prints
// it, uncompressed for IPv6 ("0:0:0:0:0:0:0:1"), which is how Kafka users
// write IPv6 hosts in ACLs: such a DENY applies to a client Go sees as
// "::1".
func TestACLIPv6HostForms(t *testing.T) {
	b := aclTestBroker(t, []meta.ACL{
		aclTestACL(meta.ResourceTopic, "t", "User:*", "*", meta.OpDescribe, meta.PermissionAllow),
		aclTestACL(meta.ResourceTopic, "t", "User:mallory", "0:0:0:0:0:0:0:1", meta.OpDescribe, meta.PermissionDeny),
	})
	conn := &protocol.ConnInfo{Principal: "User:mallory", Remote: &net.TCPAddr{IP: net.ParseIP("::1"), Port: 40000}}
	if code := aclTestListOffsets(b, conn); code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("ListOffsets by User:mallory from ::1 with DENY Describe from host 0:0:0:0:0:0:0:1: %v, want TOPIC_AUTHORIZATION_FAILED (Kafka's host string for ::1)",
			kerr.ErrorForCode(code))
	}
}

// Kafka's handleOffsetForLeaderEpochRequest ignores ReplicaID for
// authorization: CLUSTER_ACTION on the cluster authorizes every topic,
// else DESCRIBE on each topic, and the refusal is TOPIC_AUTHORIZATION_FAILED.
func TestOffsetForLeaderEpochAuthorization(t *testing.T) {
	b := aclTestBroker(t, []meta.ACL{
		aclTestACL(meta.ResourceCluster, meta.ClusterResourceName, "User:broker", "*", meta.OpClusterAction, meta.PermissionAllow),
		aclTestACL(meta.ResourceTopic, "t", "User:consumer", "*", meta.OpDescribe, meta.PermissionAllow),
	})
	send := func(principal string, replicaID int32) int16 {
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.Version, r.ReplicaID = 4, replicaID
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, -1, 1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		conn := &protocol.ConnInfo{Principal: principal, Remote: &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}}
		resp := b.handleOffsetForLeaderEpoch(context.Background(), &protocol.Request{Body: r, Version: 4, Conn: conn})
		return resp.Body.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
	}
	authz := func(code int16) bool {
		return code == kerr.TopicAuthorizationFailed.Code || code == kerr.ClusterAuthorizationFailed.Code
	}
	// A principal with CLUSTER_ACTION but no topic ACL, ReplicaID -1: Kafka authorizes it.
	if code := send("User:broker", -1); authz(code) {
		t.Errorf("CLUSTER_ACTION principal, ReplicaID -1: %v; Kafka authorizes it (CLUSTER_ACTION covers every topic)", kerr.ErrorForCode(code))
	}
	// A consumer with DESCRIBE on the topic that sets ReplicaID 5: Kafka authorizes it.
	if code := send("User:consumer", 5); authz(code) {
		t.Errorf("DESCRIBE principal, ReplicaID 5: %v; Kafka authorizes it (DESCRIBE on the topic)", kerr.ErrorForCode(code))
	}
}

// CreateAcls naming the same binding twice: Kafka answers SUCCESS for
// both (AclControlManager.createAcls skips the second), and so does samsa.
func TestCreateAclsDuplicateBinding(t *testing.T) {
	b := aclTestBroker(t, nil)
	b.cfg.SuperUsers = []string{"User:admin"}
	r := kmsg.NewPtrCreateACLsRequest()
	r.Version = 3
	for _, name := range []string{"orders", "payments", "orders"} {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		r.Creations = append(r.Creations, c)
	}
	conn := &protocol.ConnInfo{Principal: "User:admin", Remote: &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := b.handleCreateACLs(ctx, &protocol.Request{Body: r, Version: 3, Conn: conn})
	var got *kmsg.CreateACLsResponse
	if resp.Later != nil {
		got = resp.Later().(*kmsg.CreateACLsResponse)
	} else {
		got = resp.Body.(*kmsg.CreateACLsResponse)
	}
	for i, res := range got.Results {
		if res.ErrorCode != 0 {
			msg := ""
			if res.ErrorMessage != nil {
				msg = *res.ErrorMessage
			}
			t.Errorf("creation %d: %v (%s); Kafka: SUCCESS", i, kerr.ErrorForCode(res.ErrorCode), msg)
		}
	}
}
