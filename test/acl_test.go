package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/broker"
)

// The authorization matrix (issue 12): every API samsa serves, asked by
// four principals of a broker with ACL authorization on:
//
//   - admin, a super user;
//   - alice, a user given exactly the ACLs the request needs (created for
//     the row and deleted after it);
//   - bob, an authenticated user without ACLs;
//   - anonymous, a client of the PLAINTEXT listener (User:ANONYMOUS).
//
// bob and anonymous must get the exact error code Kafka answers, or, for
// the requests that filter (Metadata of all topics, ListGroups), see
// nothing; and the cluster's state (topics, partitions, records, groups,
// offsets, configs, ACLs, SCRAM users) must be the same before and after
// their attempts. alice must get exactly what admin gets, which must not
// be an authorization error. Resources that a request creates or deletes
// are per principal (ct-alice, ct-admin...) so that each principal's
// attempt meets the same state.

const (
	codeTopicAuth   = 29 // TOPIC_AUTHORIZATION_FAILED
	codeGroupAuth   = 30 // GROUP_AUTHORIZATION_FAILED
	codeClusterAuth = 31 // CLUSTER_AUTHORIZATION_FAILED
	codeTxnAuth     = 53 // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
)

// aclOpts configures an authorizing broker: SASL_PLAINTEXT (PLAIN; the
// inter-broker listener, where the broker itself logs in as admin) and an
// anonymous PLAINTEXT listener.
func aclOpts(cfg *broker.Config) {
	cfg.Listeners = []string{"SASL_PLAINTEXT://127.0.0.1:0", "PLAINTEXT://127.0.0.1:0"}
	for k, v := range map[string]string{
		"listener.security.protocol.map":       "SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"inter.broker.listener.name":           "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":              "PLAIN",
		"sasl.mechanism.inter.broker.protocol": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:admin",
	} {
		if err := cfg.Set(k, v); err != nil {
			panic(err)
		}
	}
}

// aclLogin is a client of addr logged in with PLAIN as user, whose
// password in aclOpts is user + "-secret".
func aclLogin(t testing.TB, addr, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return secureClient(t, addr, append([]kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())}, opts...)...)
}

// aclOutcome is what a principal got: the error code that matters and a
// summary of what the answer revealed ("" = nothing).
type aclOutcome struct {
	code   int16
	reveal string
}

func (o aclOutcome) String() string {
	return fmt.Sprintf("code %d (%v), revealed %q", o.code, kerr.ErrorForCode(o.code), o.reveal)
}

// aclGrant is one ACL alice gets for a row.
type aclGrant struct {
	typ  kmsg.ACLResourceType
	name string
	op   kmsg.ACLOperation
}

type aclRow struct {
	name string
	// grants are alice's ACLs; who is substituted for %s in names.
	grants []aclGrant
	// denied is the code bob and anonymous get (0 for the filtering
	// requests, which then must reveal nothing).
	denied int16
	run    func(ctx context.Context, t *testing.T, br *kgo.Broker, who string) aclOutcome
	// settle, if set, returns nil once what admin's and alice's requests
	// started in the background is done (before the next row's state).
	settle func(ctx context.Context, admin *kgo.Client) error
}

func isAuthCode(c int16) bool {
	return c == codeTopicAuth || c == codeGroupAuth || c == codeClusterAuth || c == codeTxnAuth
}

// rawRequest sends req to the broker as is.
func rawRequest[R kmsg.Response](ctx context.Context, t *testing.T, br *kgo.Broker, req kmsg.Request) R {
	t.Helper()
	resp, err := br.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

func TestACLMatrix(t *testing.T) {
	b := StartBroker(t, aclOpts)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	saslAddr, plainAddr := b.Addrs()[0], b.Addrs()[1]
	login := func(user string) *kgo.Client { return aclLogin(t, saslAddr, user) }
	clients := map[string]*kgo.Client{
		"admin": login("admin"), "alice": login("alice"), "bob": login("bob"),
		"anonymous": secureClient(t, plainAddr),
	}
	brokers := map[string]*kgo.Broker{}
	for who, cl := range clients {
		brokers[who] = brokerOne(t, ctx, cl)
	}
	adm := kadm.NewClient(clients["admin"])

	// The cluster the requests meet.
	who4 := []string{"admin", "alice", "bob", "anonymous"}
	create := []string{"t"}
	for _, w := range who4 {
		create = append(create, "dt-"+w, "cp-"+w)
	}
	for _, name := range create {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	admin := clients["admin"]
	for i := range 3 {
		if err := admin.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	for _, g := range append([]string{"g"}, prefixed("dg-", who4)...) {
		if _, err := adm.CommitOffsets(ctx, g, offsets); err != nil {
			t.Fatal(err)
		}
	}
	// The OffsetDelete groups keep a second offset, so that deleting the
	// first leaves them non-empty: an empty group is removed in the
	// background, which would change the state between two snapshots.
	odOffsets := kadm.Offsets{}
	odOffsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	odOffsets.Add(kadm.Offset{Topic: "cp-admin", Partition: 0, At: 0, LeaderEpoch: -1})
	for _, w := range who4 {
		if _, err := adm.CommitOffsets(ctx, "od-"+w, odOffsets); err != nil {
			t.Fatal(err)
		}
		victim := kadm.NewACLs().Topics("z").Allow("User:victim-" + w).Operations(kadm.OpRead)
		if res, err := adm.CreateACLs(ctx, victim); err != nil || res[0].Err != nil {
			t.Fatalf("create victim ACL: %v %v", err, res)
		}
	}

	for _, row := range aclRows() {
		t.Run(row.name, func(t *testing.T) {
			for _, who := range []string{"bob", "anonymous"} {
				before := aclClusterState(ctx, t, admin)
				got := row.run(ctx, t, brokers[who], who)
				if got.code != row.denied || got.reveal != "" {
					t.Errorf("%s: %v; want code %d (%v), nothing revealed", who, got, row.denied, kerr.ErrorForCode(row.denied))
				}
				if after := aclClusterState(ctx, t, admin); after != before {
					t.Errorf("%s's refused request changed the cluster:\nbefore %s\nafter  %s", who, before, after)
				}
			}
			grantAlice(ctx, t, admin, row.grants)
			want := row.run(ctx, t, brokers["admin"], "admin")
			if isAuthCode(want.code) {
				t.Fatalf("admin (super user): %v", want)
			}
			if got := row.run(ctx, t, brokers["alice"], "alice"); got != want {
				t.Errorf("alice with %v: %v; admin got %v", row.grants, got, want)
			}
			revokeAlice(ctx, t, adm)
			if row.settle != nil {
				WaitFor(t, 30*time.Second, func() error { return row.settle(ctx, admin) })
			}
		})
	}
}

func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// grantAlice creates alice's ACLs for a row, with "%s" in names read as
// "alice".
func grantAlice(ctx context.Context, t *testing.T, admin *kgo.Client, grants []aclGrant) {
	t.Helper()
	if len(grants) == 0 {
		return
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, g := range grants {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = g.typ, strings.ReplaceAll(g.name, "%s", "alice"), kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", g.op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("create alice's ACLs: %s", kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

func revokeAlice(ctx context.Context, t *testing.T, adm *kadm.Client) {
	t.Helper()
	res, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Allow("User:alice").Operations(kadm.OpAny).
		ResourcePatternType(kadm.ACLPatternAny).AllowHosts())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("delete alice's ACLs: %v", r.Err)
		}
	}
}

// aclClusterState summarises everything a refused request could change.
func aclClusterState(ctx context.Context, t *testing.T, admin *kgo.Client) string {
	adm := kadm.NewClient(admin)
	t.Helper()
	var sb strings.Builder
	// Not adm.Metadata: kadm answers it from franz-go's metadata cache.
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, mt := range md.Topics {
		topics = append(topics, fmt.Sprintf("topic %s/%d ", *mt.Topic, len(mt.Partitions)))
	}
	slices.Sort(topics)
	sb.WriteString(strings.Join(topics, ""))
	ends, err := adm.ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup("t", 0); ok {
		fmt.Fprintf(&sb, "end %d ", o.Offset)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := groups.Groups()
	slices.Sort(names)
	fmt.Fprintf(&sb, "groups %v ", names)
	fetched := adm.FetchManyOffsets(ctx, names...)
	for _, g := range names {
		r := fetched[g]
		if r.Err != nil {
			t.Fatalf("fetch offsets of %s: %v", g, r.Err)
		}
		var offs []string
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			offs = append(offs, fmt.Sprintf("%s:%s/%d@%d ", g, o.Topic, o.Partition, o.At))
		})
		slices.Sort(offs)
		sb.WriteString(strings.Join(offs, ""))
	}
	acls, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().Operations(kadm.OpAny).
		ResourcePatternType(kadm.ACLPatternAny).AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range acls {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		n += len(r.Described)
	}
	fmt.Fprintf(&sb, "acls %d ", n)
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&sb, "scram %v ", slices.Sorted(func(yield func(string) bool) {
		for u := range users {
			if !yield(u) {
				return
			}
		}
	}))
	rcs, err := adm.DescribeTopicConfigs(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				fmt.Fprintf(&sb, "%s=%s ", c.Key, c.MaybeValue())
			}
		}
	}
	return sb.String()
}

func aclRows() []aclRow {
	topic := func(name string, op kmsg.ACLOperation) aclGrant { return aclGrant{kmsg.ACLResourceTypeTopic, name, op} }
	group := func(name string, op kmsg.ACLOperation) aclGrant { return aclGrant{kmsg.ACLResourceTypeGroup, name, op} }
	cluster := func(op kmsg.ACLOperation) aclGrant { return aclGrant{kmsg.ACLResourceTypeCluster, "kafka-cluster", op} }
	txn := func(name string, op kmsg.ACLOperation) aclGrant {
		return aclGrant{kmsg.ACLResourceTypeTransactionalId, name, op}
	}
	type B = *kgo.Broker
	type T = *testing.T
	type C = context.Context
	return []aclRow{{
		name: "Produce", grants: []aclGrant{topic("t", kmsg.ACLOperationWrite)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: []byte(who)}})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := rawRequest[*kmsg.ProduceResponse](ctx, t, br, req)
			return aclOutcome{code: resp.Topics[0].Partitions[0].ErrorCode}
		},
	}, {
		name: "Fetch", grants: []aclGrant{topic("t", kmsg.ACLOperationRead)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome { return aclFetch(ctx, t, br, -1) },
	}, {
		name: "FetchAsFollower", grants: []aclGrant{cluster(kmsg.ACLOperationClusterAction)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome { return aclFetch(ctx, t, br, 2) },
	}, {
		name: "ListOffsets", grants: []aclGrant{topic("t", kmsg.ACLOperationDescribe)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			p := rawRequest[*kmsg.ListOffsetsResponse](ctx, t, br, req).Topics[0].Partitions[0]
			o := aclOutcome{code: p.ErrorCode}
			if p.Offset >= 0 {
				o.reveal = "offset"
			}
			return o
		},
	}, {
		name: "MetadataOfATopic", grants: []aclGrant{topic("t", kmsg.ACLOperationDescribe)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrMetadataRequest()
			name := "t"
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
			req.IncludeTopicAuthorizedOperations = true
			rt := rawRequest[*kmsg.MetadataResponse](ctx, t, br, req).Topics[0]
			o := aclOutcome{code: rt.ErrorCode}
			if len(rt.Partitions) > 0 || rt.TopicID != [16]byte{} {
				// What alice and admin may do differs: only whether
				// DESCRIBE is among it.
				o.reveal = fmt.Sprintf("%d partitions, describe %v", len(rt.Partitions), rt.AuthorizedOperations&(1<<kmsg.ACLOperationDescribe) != 0)
			}
			return o
		},
	}, {
		name: "MetadataOfAllTopics", grants: []aclGrant{topic("t", kmsg.ACLOperationDescribe)}, denied: 0,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			resp := rawRequest[*kmsg.MetadataResponse](ctx, t, br, kmsg.NewPtrMetadataRequest())
			o := aclOutcome{}
			for _, rt := range resp.Topics {
				if *rt.Topic == "t" {
					o.reveal = "t"
				}
			}
			return o
		},
	}, {
		name: "MetadataAutoCreate", denied: codeTopicAuth,
		grants: []aclGrant{topic("mt-%s", kmsg.ACLOperationDescribe), topic("mt-%s", kmsg.ACLOperationCreate)},
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrMetadataRequest()
			name := "mt-" + who
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
			req.AllowAutoTopicCreation = true
			return aclOutcome{code: rawRequest[*kmsg.MetadataResponse](ctx, t, br, req).Topics[0].ErrorCode}
		},
		settle: func(ctx C, admin *kgo.Client) error {
			// Created in the background: wait until the broker serves both.
			req := kmsg.NewPtrMetadataRequest()
			for _, name := range []string{"mt-admin", "mt-alice"} {
				req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)})
			}
			resp, err := req.RequestWith(ctx, admin)
			if err != nil {
				return err
			}
			for _, rt := range resp.Topics {
				if rt.ErrorCode != 0 || len(rt.Partitions) == 0 {
					return fmt.Errorf("%s: %v", *rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
				}
			}
			return nil
		},
	}, {
		name: "OffsetCommit", denied: codeGroupAuth,
		grants: []aclGrant{group("oc-%s", kmsg.ACLOperationRead), topic("t", kmsg.ACLOperationRead)},
		run: func(ctx C, t T, br B, who string) aclOutcome {
			return aclOutcome{code: aclCommit(ctx, t, br, "oc-"+who)}
		},
	}, {
		name: "OffsetFetch", denied: codeGroupAuth,
		grants: []aclGrant{group("g", kmsg.ACLOperationDescribe), topic("t", kmsg.ACLOperationDescribe)},
		run:    func(ctx C, t T, br B, _ string) aclOutcome { return aclOffsetFetch(ctx, t, br, "g", []string{"t"}) },
	}, {
		name: "FindCoordinatorOfAGroup", grants: []aclGrant{group("g", kmsg.ACLOperationDescribe)}, denied: codeGroupAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome { return aclFindCoordinator(ctx, t, br, 0, "g") },
	}, {
		name: "FindCoordinatorOfATransaction", grants: []aclGrant{txn("x", kmsg.ACLOperationDescribe)}, denied: codeTxnAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome { return aclFindCoordinator(ctx, t, br, 1, "x") },
	}, {
		name: "JoinGroup", grants: []aclGrant{group("jg-%s", kmsg.ACLOperationRead)}, denied: codeGroupAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "jg-"+who, "consumer", 10000, 10000
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
			resp := rawRequest[*kmsg.JoinGroupResponse](ctx, t, br, req)
			o := aclOutcome{code: resp.ErrorCode}
			if resp.MemberID != "" {
				o.reveal = "a member id"
			}
			return o
		},
	}, {
		name: "Heartbeat", grants: []aclGrant{group("g", kmsg.ACLOperationRead)}, denied: codeGroupAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = "g", 1, "m"
			return aclOutcome{code: rawRequest[*kmsg.HeartbeatResponse](ctx, t, br, req).ErrorCode}
		},
	}, {
		name: "SyncGroup", grants: []aclGrant{group("g", kmsg.ACLOperationRead)}, denied: codeGroupAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrSyncGroupRequest()
			pt, p := "consumer", "range"
			req.Group, req.Generation, req.MemberID, req.ProtocolType, req.Protocol = "g", 1, "m", &pt, &p
			return aclOutcome{code: rawRequest[*kmsg.SyncGroupResponse](ctx, t, br, req).ErrorCode}
		},
	}, {
		name: "LeaveGroup", grants: []aclGrant{group("g", kmsg.ACLOperationRead)}, denied: codeGroupAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group = "g"
			req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			resp := rawRequest[*kmsg.LeaveGroupResponse](ctx, t, br, req)
			o := aclOutcome{code: resp.ErrorCode}
			for _, m := range resp.Members {
				o.reveal += fmt.Sprintf("member %s: %d ", m.MemberID, m.ErrorCode)
			}
			return o
		},
	}, {
		name: "DescribeGroups", grants: []aclGrant{group("g", kmsg.ACLOperationDescribe)}, denied: codeGroupAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups, req.IncludeAuthorizedOperations = []string{"g"}, true
			g := rawRequest[*kmsg.DescribeGroupsResponse](ctx, t, br, req).Groups[0]
			o := aclOutcome{code: g.ErrorCode}
			if g.State != "" || g.ProtocolType != "" || len(g.Members) > 0 || g.AuthorizedOperations > 0 {
				o.reveal = fmt.Sprintf("state %q, protocol type %q, %d members", g.State, g.ProtocolType, len(g.Members))
			}
			return o
		},
	}, {
		name: "ListGroups", grants: []aclGrant{group("g", kmsg.ACLOperationDescribe)}, denied: 0,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			resp := rawRequest[*kmsg.ListGroupsResponse](ctx, t, br, kmsg.NewPtrListGroupsRequest())
			o := aclOutcome{code: resp.ErrorCode}
			for _, g := range resp.Groups {
				if g.Group == "g" {
					o.reveal = "g"
				}
			}
			return o
		},
	}, {
		name: "CreateTopics", grants: []aclGrant{topic("ct-%s", kmsg.ACLOperationCreate)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "ct-"+who, 1, 1
			req.Topics, req.TimeoutMillis = append(req.Topics, rt), 30000
			r := rawRequest[*kmsg.CreateTopicsResponse](ctx, t, br, req).Topics[0]
			o := aclOutcome{code: r.ErrorCode}
			if r.TopicID != [16]byte{} {
				o.reveal = "a topic id"
			}
			return o
		},
	}, {
		name: "DeleteTopics", grants: []aclGrant{topic("dt-%s", kmsg.ACLOperationDelete)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrDeleteTopicsRequest()
			name := "dt-" + who
			req.TopicNames, req.Topics, req.TimeoutMillis = []string{name}, []kmsg.DeleteTopicsRequestTopic{{Topic: &name}}, 30000
			r := rawRequest[*kmsg.DeleteTopicsResponse](ctx, t, br, req).Topics[0]
			o := aclOutcome{code: r.ErrorCode}
			if r.TopicID != [16]byte{} {
				o.reveal = "a topic id"
			}
			return o
		},
	}, {
		name: "InitProducerID", grants: []aclGrant{cluster(kmsg.ACLOperationIdempotentWrite)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			resp := rawRequest[*kmsg.InitProducerIDResponse](ctx, t, br, kmsg.NewPtrInitProducerIDRequest())
			o := aclOutcome{code: resp.ErrorCode}
			if resp.ProducerID >= 0 {
				o.reveal = "id" // ids differ between calls: only whether one was given
			}
			return o
		},
	}, {
		name: "OffsetForLeaderEpoch", grants: []aclGrant{topic("t", kmsg.ACLOperationDescribe)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			p := rawRequest[*kmsg.OffsetForLeaderEpochResponse](ctx, t, br, req).Topics[0].Partitions[0]
			o := aclOutcome{code: p.ErrorCode}
			if p.EndOffset >= 0 {
				o.reveal = fmt.Sprint(p.EndOffset)
			}
			return o
		},
	}, {
		name: "DescribeACLs", grants: []aclGrant{cluster(kmsg.ACLOperationDescribe)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			resp := rawRequest[*kmsg.DescribeACLsResponse](ctx, t, br, req)
			o := aclOutcome{code: resp.ErrorCode}
			if len(resp.Resources) > 0 {
				o.reveal = fmt.Sprintf("%d resources", len(resp.Resources))
			}
			return o
		},
	}, {
		name: "CreateACLs", grants: []aclGrant{cluster(kmsg.ACLOperationAlter)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "z", kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:made-by-"+who, "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
			return aclOutcome{code: rawRequest[*kmsg.CreateACLsResponse](ctx, t, br, req).Results[0].ErrorCode}
		},
	}, {
		name: "DeleteACLs", grants: []aclGrant{cluster(kmsg.ACLOperationAlter)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrDeleteACLsRequest()
			f := kmsg.NewDeleteACLsRequestFilter()
			principal := "User:victim-" + who
			f.ResourceType, f.ResourcePatternType, f.Principal = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, &principal
			f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			req.Filters = append(req.Filters, f)
			r := rawRequest[*kmsg.DeleteACLsResponse](ctx, t, br, req).Results[0]
			o := aclOutcome{code: r.ErrorCode}
			if len(r.MatchingACLs) > 0 {
				o.reveal = fmt.Sprintf("%d matching", len(r.MatchingACLs))
			}
			return o
		},
	}, {
		name: "DescribeTopicConfigs", grants: []aclGrant{topic("t", kmsg.ACLOperationDescribeConfigs)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			return aclDescribeConfigs(ctx, t, br, kmsg.ConfigResourceTypeTopic, "t")
		},
	}, {
		name: "DescribeBrokerConfigs", grants: []aclGrant{cluster(kmsg.ACLOperationDescribeConfigs)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			return aclDescribeConfigs(ctx, t, br, kmsg.ConfigResourceTypeBroker, "1")
		},
	}, {
		name: "AlterConfigs", grants: []aclGrant{topic("t", kmsg.ACLOperationAlterConfigs)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrAlterConfigsRequest()
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			v := "86400000"
			if who == "bob" || who == "anonymous" {
				v = "1234" // refused: must not show in the state
			}
			res.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: &v}}
			req.Resources = append(req.Resources, res)
			return aclOutcome{code: rawRequest[*kmsg.AlterConfigsResponse](ctx, t, br, req).Resources[0].ErrorCode}
		},
	}, {
		name: "IncrementalAlterConfigs", grants: []aclGrant{topic("t", kmsg.ACLOperationAlterConfigs)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
			v := "2048000"
			if who == "bob" || who == "anonymous" {
				v = "4096"
			}
			res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "segment.bytes", Value: &v}}
			req.Resources = append(req.Resources, res)
			return aclOutcome{code: rawRequest[*kmsg.IncrementalAlterConfigsResponse](ctx, t, br, req).Resources[0].ErrorCode}
		},
	}, {
		name: "CreatePartitions", grants: []aclGrant{topic("cp-%s", kmsg.ACLOperationAlter)}, denied: codeTopicAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrCreatePartitionsRequest()
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = "cp-"+who, 2
			req.Topics, req.TimeoutMillis = append(req.Topics, rt), 30000
			return aclOutcome{code: rawRequest[*kmsg.CreatePartitionsResponse](ctx, t, br, req).Topics[0].ErrorCode}
		},
	}, {
		name: "DeleteGroups", grants: []aclGrant{group("dg-%s", kmsg.ACLOperationDelete)}, denied: codeGroupAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{"dg-" + who}
			return aclOutcome{code: rawRequest[*kmsg.DeleteGroupsResponse](ctx, t, br, req).Groups[0].ErrorCode}
		},
	}, {
		name: "ElectLeaders", grants: []aclGrant{cluster(kmsg.ACLOperationAlter)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrElectLeadersRequest()
			req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			req.TimeoutMillis = 30000
			resp := rawRequest[*kmsg.ElectLeadersResponse](ctx, t, br, req)
			code := resp.ErrorCode
			if code == 0 {
				code = resp.Topics[0].Partitions[0].ErrorCode
			}
			return aclOutcome{code: code}
		},
	}, {
		name: "OffsetDelete", denied: codeGroupAuth,
		grants: []aclGrant{group("od-%s", kmsg.ACLOperationDelete), topic("t", kmsg.ACLOperationRead)},
		run: func(ctx C, t T, br B, who string) aclOutcome {
			return aclOutcome{code: aclOffsetDelete(ctx, t, br, "od-"+who)}
		},
	}, {
		name: "DescribeUserSCRAMCredentials", grants: []aclGrant{cluster(kmsg.ACLOperationDescribe)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			resp := rawRequest[*kmsg.DescribeUserSCRAMCredentialsResponse](ctx, t, br, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
			o := aclOutcome{code: resp.ErrorCode}
			if len(resp.Results) > 0 {
				o.reveal = fmt.Sprintf("%d users", len(resp.Results))
			}
			return o
		},
	}, {
		name: "AlterUserSCRAMCredentials", grants: []aclGrant{cluster(kmsg.ACLOperationAlter)}, denied: codeClusterAuth,
		run: func(ctx C, t T, br B, who string) aclOutcome {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
			u.Name, u.Mechanism, u.Iterations = "u-"+who, 1, 4096
			u.Salt, u.SaltedPassword = []byte("0123456789abcdef"), make([]byte, 32)
			req.Upsertions = append(req.Upsertions, u)
			return aclOutcome{code: rawRequest[*kmsg.AlterUserSCRAMCredentialsResponse](ctx, t, br, req).Results[0].ErrorCode}
		},
	}, {
		name: "DescribeCluster", grants: []aclGrant{cluster(kmsg.ACLOperationDescribe)}, denied: 0,
		run: func(ctx C, t T, br B, _ string) aclOutcome {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.IncludeClusterAuthorizedOperations = true
			resp := rawRequest[*kmsg.DescribeClusterResponse](ctx, t, br, req)
			o := aclOutcome{code: resp.ErrorCode}
			if resp.ClusterAuthorizedOperations != 0 {
				// What alice and admin may do differs: only whether
				// DESCRIBE is among it.
				o.reveal = fmt.Sprint(resp.ClusterAuthorizedOperations&(1<<kmsg.ACLOperationDescribe) != 0)
			}
			return o
		},
	}}
}

func aclFetch(ctx context.Context, t *testing.T, br *kgo.Broker, replicaID int32) aclOutcome {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = replicaID, 1<<20, 0
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := rawRequest[*kmsg.FetchResponse](ctx, t, br, req).Topics[0].Partitions[0]
	o := aclOutcome{code: p.ErrorCode}
	if len(p.RecordBatches) > 0 || p.HighWatermark >= 0 {
		o.reveal = fmt.Sprintf("high watermark %d, %d bytes", p.HighWatermark, len(p.RecordBatches))
	}
	return o
}

func aclCommit(ctx context.Context, t *testing.T, br *kgo.Broker, group string) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = 2, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return rawRequest[*kmsg.OffsetCommitResponse](ctx, t, br, req).Topics[0].Partitions[0].ErrorCode
}

// aclOffsetFetch fetches a group's offsets (v8 shape: kgo sends the
// highest version); topics nil asks for all.
func aclOffsetFetch(ctx context.Context, t *testing.T, br *kgo.Broker, group string, topics []string) aclOutcome {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	for _, tp := range topics {
		rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: tp, Partitions: []int32{0}})
	}
	req.Groups = append(req.Groups, rg)
	g := rawRequest[*kmsg.OffsetFetchResponse](ctx, t, br, req).Groups[0]
	o := aclOutcome{code: g.ErrorCode}
	for _, tp := range g.Topics {
		for _, p := range tp.Partitions {
			if o.code == 0 {
				o.code = p.ErrorCode
			}
			if p.Offset >= 0 {
				o.reveal += fmt.Sprintf("%s/%d@%d ", tp.Topic, p.Partition, p.Offset)
			}
		}
	}
	return o
}

func aclFindCoordinator(ctx context.Context, t *testing.T, br *kgo.Broker, keyType int8, key string) aclOutcome {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = keyType, key, []string{key}
	resp := rawRequest[*kmsg.FindCoordinatorResponse](ctx, t, br, req)
	code, node := resp.ErrorCode, resp.NodeID
	if len(resp.Coordinators) > 0 {
		code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
	}
	o := aclOutcome{code: code}
	if node >= 0 {
		o.reveal = fmt.Sprint(node)
	}
	return o
}

func aclDescribeConfigs(ctx context.Context, t *testing.T, br *kgo.Broker, typ kmsg.ConfigResourceType, name string) aclOutcome {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	req.Resources = append(req.Resources, res)
	r := rawRequest[*kmsg.DescribeConfigsResponse](ctx, t, br, req).Resources[0]
	o := aclOutcome{code: r.ErrorCode}
	if len(r.Configs) > 0 {
		o.reveal = fmt.Sprintf("%d configs", len(r.Configs))
	}
	return o
}

func aclOffsetDelete(ctx context.Context, t *testing.T, br *kgo.Broker, group string) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	resp := rawRequest[*kmsg.OffsetDeleteResponse](ctx, t, br, req)
	if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
		return resp.ErrorCode
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
