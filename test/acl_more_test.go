package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/broker"
)

// aclAllow is an ALLOW ACL for principal from any host.
func aclAllow(typ kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = typ, name, pattern
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
	return c
}

// createACLs creates ACLs and returns each creation's error code.
func createACLs(ctx context.Context, t *testing.T, cl *kgo.Client, cs ...kmsg.CreateACLsRequestCreation) []int16 {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = cs
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]int16, len(resp.Results))
	for i, r := range resp.Results {
		codes[i] = r.ErrorCode
	}
	return codes
}

func mustCreateACLs(ctx context.Context, t *testing.T, cl *kgo.Client, cs ...kmsg.CreateACLsRequestCreation) {
	t.Helper()
	for i, c := range createACLs(ctx, t, cl, cs...) {
		if c != 0 {
			t.Fatalf("create ACL %+v: %v", cs[i], kerr.ErrorForCode(c))
		}
	}
}

// What one ACL or its absence allows, beyond the matrix: a group ACL
// without the topic's, prefixed and host-bound ACLs, DENY over ALLOW,
// KIP-679's idempotent producer, the ACL requests' filters and
// validation, and franz-go producing and consuming with a group under
// ACLs.
func TestACLCases(t *testing.T) {
	b := StartBroker(t, aclOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	saslAddr := b.Addrs()[0]
	login := func(user string, opts ...kgo.Opt) *kgo.Client { return aclLogin(t, saslAddr, user, opts...) }
	admin := login("admin")
	adm := kadm.NewClient(admin)
	for _, name := range []string{"t", "pre-x", "other"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "pg", offsets); err != nil {
		t.Fatal(err)
	}
	alice := brokerOne(t, ctx, login("alice"))
	const (
		topic   = kmsg.ACLResourceTypeTopic
		group   = kmsg.ACLResourceTypeGroup
		literal = kmsg.ACLResourcePatternTypeLiteral
	)

	t.Run("GroupWithoutTopic", func(t *testing.T) {
		defer revokeAlice(ctx, t, adm)
		mustCreateACLs(ctx, t, admin, aclAllow(group, "pg", literal, "User:alice", kmsg.ACLOperationAll))
		if code := aclCommit(ctx, t, alice, "pg"); code != codeTopicAuth {
			t.Errorf("OffsetCommit with the group's ACL only: %v", kerr.ErrorForCode(code))
		}
		if o := aclOffsetFetch(ctx, t, alice, "pg", []string{"t"}); o.code != codeTopicAuth || o.reveal != "" {
			t.Errorf("OffsetFetch of t with the group's ACL only: %v", o)
		}
		if o := aclOffsetFetch(ctx, t, alice, "pg", nil); o.code != 0 || o.reveal != "" {
			t.Errorf("OffsetFetch of all topics with the group's ACL only: %v; want t left out", o)
		}
		if code := aclOffsetDelete(ctx, t, alice, "pg"); code != codeTopicAuth {
			t.Errorf("OffsetDelete with the group's ACL only: %v", kerr.ErrorForCode(code))
		}
		mustCreateACLs(ctx, t, admin, aclAllow(topic, "t", literal, "User:alice", kmsg.ACLOperationDescribe))
		if o := aclOffsetFetch(ctx, t, alice, "pg", nil); o.code != 0 || o.reveal != "t/0@1 " {
			t.Errorf("OffsetFetch of all topics with DESCRIBE on t: %v", o)
		}
	})

	t.Run("AutoCreateNeedsCreate", func(t *testing.T) {
		defer revokeAlice(ctx, t, adm)
		mustCreateACLs(ctx, t, admin, aclAllow(topic, "auto", literal, "User:alice", kmsg.ACLOperationDescribe))
		req := kmsg.NewPtrMetadataRequest()
		name := "auto"
		req.Topics, req.AllowAutoTopicCreation = []kmsg.MetadataRequestTopic{{Topic: &name}}, true
		if code := rawRequest[*kmsg.MetadataResponse](ctx, t, alice, req).Topics[0].ErrorCode; code != codeTopicAuth {
			t.Errorf("auto-creation with DESCRIBE only: %v", kerr.ErrorForCode(code))
		}
		// Raw: kadm's Metadata may answer from franz-go's cache.
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		for _, mt := range md.Topics {
			if *mt.Topic == "auto" {
				t.Error("topic auto was created")
			}
		}
	})

	t.Run("PrefixedHostAndDeny", func(t *testing.T) {
		defer revokeAlice(ctx, t, adm)
		produce := func(name string) int16 {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = name
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: []byte("x")}})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return rawRequest[*kmsg.ProduceResponse](ctx, t, alice, req).Topics[0].Partitions[0].ErrorCode
		}
		mustCreateACLs(ctx, t, admin, aclAllow(topic, "pre-", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationWrite))
		if c := produce("pre-x"); c != 0 {
			t.Errorf("produce to pre-x with a PREFIXED pre- ACL: %v", kerr.ErrorForCode(c))
		}
		if c := produce("other"); c != codeTopicAuth {
			t.Errorf("produce to other with a PREFIXED pre- ACL: %v", kerr.ErrorForCode(c))
		}
		// An ACL for another host does not apply to 127.0.0.1.
		elsewhere := aclAllow(topic, "other", literal, "User:alice", kmsg.ACLOperationWrite)
		elsewhere.Host = "10.9.9.9"
		mustCreateACLs(ctx, t, admin, elsewhere)
		if c := produce("other"); c != codeTopicAuth {
			t.Errorf("produce from 127.0.0.1 with an ACL for 10.9.9.9: %v", kerr.ErrorForCode(c))
		}
		// DENY for everyone wins over alice's ALLOW.
		deny := aclAllow(topic, "pre-x", literal, "User:*", kmsg.ACLOperationAll)
		deny.PermissionType = kmsg.ACLPermissionTypeDeny
		mustCreateACLs(ctx, t, admin, deny)
		if c := produce("pre-x"); c != codeTopicAuth {
			t.Errorf("produce to pre-x under a DENY ALL for User:*: %v", kerr.ErrorForCode(c))
		}
		if res, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("pre-x").Deny("User:*").DenyHosts("*").Operations(kadm.OpAll)); err != nil || len(res) != 1 || res[0].Err != nil || len(res[0].Deleted) != 1 {
			t.Fatalf("delete the DENY: %v %+v", err, res)
		}
		if c := produce("pre-x"); c != 0 {
			t.Errorf("produce to pre-x once the DENY is gone: %v", kerr.ErrorForCode(c))
		}
	})

	t.Run("IdempotentProducerWithTopicWrite", func(t *testing.T) {
		defer revokeAlice(ctx, t, adm)
		init := func() int16 {
			return rawRequest[*kmsg.InitProducerIDResponse](ctx, t, alice, kmsg.NewPtrInitProducerIDRequest()).ErrorCode
		}
		if c := init(); c != codeClusterAuth {
			t.Errorf("InitProducerId without ACLs: %v", kerr.ErrorForCode(c))
		}
		// KIP-679: WRITE on any topic is enough.
		mustCreateACLs(ctx, t, admin, aclAllow(topic, "t", literal, "User:alice", kmsg.ACLOperationWrite))
		if c := init(); c != 0 {
			t.Errorf("InitProducerId with WRITE on a topic: %v", kerr.ErrorForCode(c))
		}
	})

	t.Run("ClientsUnderACLs", func(t *testing.T) {
		defer revokeAlice(ctx, t, adm)
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, "rt"); err != nil {
			t.Fatal(err)
		}
		// Refused at once, not retried until a timeout.
		p := login("alice", kgo.DefaultProduceTopic("rt"))
		start := time.Now()
		err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the refused produce took %v", d)
		}
		// kafka-acls.sh --producer and --consumer.
		mustCreateACLs(ctx, t, admin,
			aclAllow(topic, "rt", literal, "User:alice", kmsg.ACLOperationWrite),
			aclAllow(topic, "rt", literal, "User:alice", kmsg.ACLOperationCreate),
			aclAllow(topic, "rt", literal, "User:alice", kmsg.ACLOperationDescribe),
			aclAllow(topic, "rt", literal, "User:alice", kmsg.ACLOperationRead),
			aclAllow(group, "rtg", literal, "User:alice", kmsg.ACLOperationRead))
		roundTrip(ctx, t, saslAddr, "rt", "rtg", 20, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		// DescribeGroups tells alice what she may do with the group.
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups, req.IncludeAuthorizedOperations = []string{"rtg"}, true
		g := rawRequest[*kmsg.DescribeGroupsResponse](ctx, t, alice, req).Groups[0]
		if want := int32(1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe); g.ErrorCode != 0 || g.AuthorizedOperations != want {
			t.Errorf("DescribeGroups: %v, authorized operations %b, want %b", kerr.ErrorForCode(g.ErrorCode), g.AuthorizedOperations, want)
		}
	})

	t.Run("DescribeAndDeleteFilters", func(t *testing.T) {
		defer revokeAlice(ctx, t, adm)
		mustCreateACLs(ctx, t, admin,
			aclAllow(topic, "f-", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationRead),
			aclAllow(topic, "f-1", literal, "User:alice", kmsg.ACLOperationWrite),
			aclAllow(topic, "*", literal, "User:alice", kmsg.ACLOperationDescribe),
			aclAllow(topic, "g-1", literal, "User:alice", kmsg.ACLOperationWrite))
		describe := func(name string, pattern kmsg.ACLResourcePatternType) []string {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourceName, req.ResourcePatternType = topic, &name, pattern
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			principal := "User:alice"
			req.Principal = &principal
			resp, err := req.RequestWith(ctx, admin)
			if err != nil || resp.ErrorCode != 0 {
				t.Fatalf("DescribeAcls: %v %v", err, resp)
			}
			var out []string
			for _, r := range resp.Resources {
				for _, a := range r.ACLs {
					out = append(out, fmt.Sprintf("%s:%s:%s", r.ResourcePatternType, r.ResourceName, a.Operation))
				}
			}
			slices.Sort(out)
			return out
		}
		if got, want := describe("f-1", kmsg.ACLResourcePatternTypeMatch), []string{"LITERAL:*:DESCRIBE", "LITERAL:f-1:WRITE", "PREFIXED:f-:READ"}; !slices.Equal(got, want) {
			t.Errorf("MATCH f-1: %v, want %v", got, want)
		}
		if got, want := describe("f-", kmsg.ACLResourcePatternTypePrefixed), []string{"PREFIXED:f-:READ"}; !slices.Equal(got, want) {
			t.Errorf("PREFIXED f-: %v, want %v", got, want)
		}
		if got := describe("f-", kmsg.ACLResourcePatternTypeLiteral); len(got) != 0 {
			t.Errorf("LITERAL f-: %v, want none", got)
		}
		// Delete what applies to f-1, and only that.
		req := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		name := "f-1"
		f.ResourceType, f.ResourceName, f.ResourcePatternType = topic, &name, kmsg.ACLResourcePatternTypeMatch
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
		resp, err := req.RequestWith(ctx, admin)
		if err != nil || resp.Results[0].ErrorCode != 0 || len(resp.Results[0].MatchingACLs) != 3 {
			t.Fatalf("DeleteAcls MATCH f-1: %v %+v", err, resp)
		}
		if got, want := describe("g-1", kmsg.ACLResourcePatternTypeMatch), []string{"LITERAL:g-1:WRITE"}; !slices.Equal(got, want) {
			t.Errorf("after deleting what matches f-1, MATCH g-1: %v, want %v", got, want)
		}
	})

	t.Run("InvalidACLs", func(t *testing.T) {
		bad := []kmsg.CreateACLsRequestCreation{
			aclAllow(kmsg.ACLResourceTypeCluster, "foo", literal, "User:alice", kmsg.ACLOperationAlter),
			aclAllow(topic, "t", kmsg.ACLResourcePatternTypeAny, "User:alice", kmsg.ACLOperationRead),
			aclAllow(topic, "t", literal, "alice", kmsg.ACLOperationRead),
			aclAllow(topic, "t", literal, "User:alice", kmsg.ACLOperationAny),
			aclAllow(topic, "", literal, "User:alice", kmsg.ACLOperationRead),
			aclAllow(kmsg.ACLResourceTypeDelegationToken, "x", literal, "User:alice", kmsg.ACLOperationRead),
		}
		good := aclAllow(topic, "t", literal, "User:valid", kmsg.ACLOperationRead)
		codes := createACLs(ctx, t, admin, append(bad, good)...)
		for i, c := range codes[:len(bad)] {
			if c != kerr.InvalidRequest.Code {
				t.Errorf("invalid ACL %+v: %v, want INVALID_REQUEST", bad[i], kerr.ErrorForCode(c))
			}
		}
		if c := codes[len(bad)]; c != 0 {
			t.Errorf("the valid ACL beside them: %v", kerr.ErrorForCode(c))
		}
		res, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().Operations(kadm.OpAny).
			ResourcePatternType(kadm.ACLPatternAny).AllowHosts().DenyHosts())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range res {
			n += len(r.Described)
		}
		if n != 1 {
			t.Errorf("%d ACLs stored, want the valid one only", n)
		}
	})
}

// Three brokers with ACL authorization: replication works through the
// brokers' own principal (a super user), an ACL created through one broker
// applies on every broker, and a DENY created later takes the access away
// everywhere.
func TestACLAcrossBrokers(t *testing.T) {
	c := startInProcessCluster(t, 3, aclOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	login := func(user, addr string, opts ...kgo.Opt) *kgo.Client { return aclLogin(t, addr, user, opts...) }
	addrs := c.bootstrap()
	admin := login("admin", addrs[0])
	adm := kadm.NewClient(admin)
	minISR := "2"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "rf3"); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, "rf3")
		if err != nil {
			return err
		}
		if isr := md.Topics["rf3"].Partitions[0].ISR; len(isr) != 3 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	mustCreateACLs(ctx, t, admin, aclAllow(kmsg.ACLResourceTypeTopic, "rf3", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationWrite))
	// Every broker lets alice produce: the leader appends, and the others
	// answer NOT_LEADER_FOR_PARTITION instead of refusing her.
	WaitFor(t, 30*time.Second, func() error {
		for i, addr := range addrs {
			code := produceAs(ctx, t, login("alice", addr, kgo.RetryTimeout(0)), "rf3")
			if code == codeTopicAuth {
				return fmt.Errorf("broker %d still refuses alice", i)
			}
		}
		return nil
	})
	p := login("alice", addrs[2], kgo.DefaultProduceTopic("rf3"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 20 {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d as alice: %v", i, err)
		}
	}
	deny := aclAllow(kmsg.ACLResourceTypeTopic, "rf", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationWrite)
	deny.PermissionType = kmsg.ACLPermissionTypeDeny
	mustCreateACLs(ctx, t, login("admin", addrs[1]), deny)
	WaitFor(t, 30*time.Second, func() error {
		for i, addr := range addrs {
			if code := produceAs(ctx, t, login("alice", addr, kgo.RetryTimeout(0)), "rf3"); code != codeTopicAuth {
				return fmt.Errorf("broker %d answers alice's produce under a DENY with %v", i, kerr.ErrorForCode(code))
			}
		}
		return nil
	})
}

// produceAs sends one record to partition 0 of topic through the client's
// seed broker and returns the partition's error code.
func produceAs(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: []byte("p")}})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// A fetch claiming a replica id on a listener other than the
// inter-broker one is refused, with or without an authorizer, and moves
// no high watermark (CVE-2018-1288).
func TestReplicaFetchOnAClientListener(t *testing.T) {
	b := StartBroker(t, func(cfg *broker.Config) {
		cfg.Listeners = []string{"BROKER://127.0.0.1:0", "CLIENT://127.0.0.1:0"}
		for k, v := range map[string]string{
			"listener.security.protocol.map": "BROKER:PLAINTEXT,CLIENT:PLAINTEXT",
			"inter.broker.listener.name":     "BROKER",
		} {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := secureClient(t, b.Addrs()[1])
	if _, err := kadm.NewClient(client).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if err := client.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if o := aclFetch(ctx, t, brokerOne(t, ctx, client), 2); o.code != codeTopicAuth || o.reveal != "" {
		t.Errorf("replica fetch on the client listener: %v; want TOPIC_AUTHORIZATION_FAILED, nothing revealed", o)
	}
	if o := aclFetch(ctx, t, brokerOne(t, ctx, secureClient(t, b.Addrs()[0])), 2); o.code == codeTopicAuth {
		t.Errorf("replica fetch on the inter-broker listener: %v", o)
	}
	if o := aclFetch(ctx, t, brokerOne(t, ctx, client), -1); o.code != 0 || o.reveal == "" {
		t.Errorf("consumer fetch on the client listener: %v", o)
	}
}
