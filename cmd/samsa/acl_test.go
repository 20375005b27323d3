package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/broker"
	samsatest "github.com/samsa-io/samsa/test"
)

// startACLBroker starts a broker that authorizes with ACLs, with one
// SASL_PLAINTEXT listener (PLAIN: admin, a super user, alice and bob, each
// of password <name>-secret), and writes a client.properties per user.
func startACLBroker(t *testing.T) (*samsatest.Broker, map[string]string) {
	t.Helper()
	b := samsatest.StartBroker(t, func(cfg *broker.Config) {
		cfg.Listeners = []string{"SASL_PLAINTEXT://127.0.0.1:0"}
		for k, v := range map[string]string{
			"sasl.enabled.mechanisms":              "PLAIN",
			"sasl.mechanism.inter.broker.protocol": "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
			"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users":           "User:admin",
		} {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		cfg.Groups.InitialRebalanceDelay = 0
	})
	dir := t.TempDir()
	props := map[string]string{}
	for _, user := range []string{"admin", "alice", "bob"} {
		p := filepath.Join(dir, user+".properties")
		body := fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"%s\" password=\"%s-secret\";\n",
			user, user)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		props[user] = p
	}
	return b, props
}

// aclClient returns a franz-go client of user (PLAIN) for the broker.
func aclClient(t *testing.T, addr, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
		kgo.RetryTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceAs produces one record to topic as user with a new client, so
// that nothing a previous attempt learnt is reused.
func produceAs(ctx context.Context, t *testing.T, addr, user, topic string) error {
	t.Helper()
	cl := aclClient(t, addr, user)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("by " + user)}).FirstErr()
}

// aclTable is what printACLs prints for the rows, each "TYPE NAME
// PATTERN PRINCIPAL HOST OPERATION PERMISSION".
func aclTable(t *testing.T, title string, rows ...string) string {
	t.Helper()
	var es []aclEntry
	for _, r := range rows {
		f := strings.Fields(r)
		if len(f) != 7 {
			t.Fatalf("bad row %q", r)
		}
		typ, err1 := kmsg.ParseACLResourceType(f[0])
		pat, err2 := kmsg.ParseACLResourcePatternType(f[2])
		op, err3 := kmsg.ParseACLOperation(f[5])
		perm, err4 := kmsg.ParseACLPermissionType(f[6])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatalf("bad row %q: %v", r, err)
		}
		es = append(es, aclEntry{typ, f[1], pat, f[3], f[4], op, perm})
	}
	var b bytes.Buffer
	if err := printACLs(&b, title, es); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestACLCommands drives `samsa acl` as a super user through
// --command-config against an authorizing broker, and checks that what it
// creates and deletes takes effect: alice and bob produce and consume only
// as their ACLs allow.
func TestACLCommands(t *testing.T) {
	b, props := startACLBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}
	admin := []string{"--command-config", props["admin"]}
	acl := func(args ...string) []string { return append(append([]string{"acl"}, args...), admin...) }

	for _, topic := range []string{"orders", "pre-a", "pre-x", "bt"} {
		c.ok("Created topic "+topic+".\n", append([]string{"topic", "create", topic}, admin...)...)
	}
	c.ok(aclTable(t, ""), acl("list")...)
	if err := produceAs(ctx, t, b.Addr, "alice", "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice producing before any ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Literal ALLOW: alice may produce to orders.
	c.ok(aclTable(t, "Created",
		"TOPIC orders LITERAL User:alice * WRITE ALLOW",
		"TOPIC orders LITERAL User:alice * DESCRIBE ALLOW"),
		acl("create", "--allow-principal", "User:alice", "--operation", "write", "--operation", "Describe", "--topic", "orders")...)
	if err := produceAs(ctx, t, b.Addr, "alice", "orders"); err != nil {
		t.Fatalf("alice producing with WRITE and DESCRIBE on orders: %v", err)
	}

	// PREFIXED ALLOW and a literal DENY, which wins over it.
	c.ok(aclTable(t, "Created",
		"TOPIC pre- PREFIXED User:alice * WRITE ALLOW",
		"TOPIC pre- PREFIXED User:alice * DESCRIBE ALLOW"),
		acl("create", "--allow-principal", "User:alice", "--operation", "Write,DESCRIBE", "--topic", "pre-",
			"--resource-pattern-type", "prefixed")...)
	c.ok(aclTable(t, "Created", "TOPIC pre-x LITERAL User:alice 127.0.0.1 WRITE DENY"),
		acl("create", "--deny-principal", "User:alice", "--deny-host", "127.0.0.1", "--operation", "write", "--topic", "pre-x")...)
	if err := produceAs(ctx, t, b.Addr, "alice", "pre-a"); err != nil {
		t.Fatalf("alice producing to pre-a under the prefixed ACL: %v", err)
	}
	if err := produceAs(ctx, t, b.Addr, "alice", "pre-x"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice producing to pre-x, denied: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// --producer and --consumer: bob produces to bt and consumes it in
	// group bg. DESCRIBE on bt, which both give, exists once.
	if err := produceAs(ctx, t, b.Addr, "bob", "bt"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob producing before his ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	c.ok(aclTable(t, "Created",
		"TOPIC bt LITERAL User:bob * WRITE ALLOW",
		"TOPIC bt LITERAL User:bob * CREATE ALLOW",
		"TOPIC bt LITERAL User:bob * DESCRIBE ALLOW"),
		acl("create", "--producer", "--allow-principal", "User:bob", "--topic", "bt")...)
	c.ok(aclTable(t, "Created",
		"TOPIC bt LITERAL User:bob * READ ALLOW",
		"TOPIC bt LITERAL User:bob * DESCRIBE ALLOW",
		"GROUP bg LITERAL User:bob * READ ALLOW"),
		acl("create", "--consumer", "--allow-principal", "User:bob", "--topic", "bt", "--group", "bg")...)
	if err := produceAs(ctx, t, b.Addr, "bob", "bt"); err != nil {
		t.Fatalf("bob producing with --producer's ACLs: %v", err)
	}
	consumer := aclClient(t, b.Addr, "bob", kgo.ConsumerGroup("bg"), kgo.ConsumeTopics("bt"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pollCtx, pollCancel := context.WithTimeout(ctx, 30*time.Second)
	fetches := consumer.PollRecords(pollCtx, 1)
	pollCancel()
	if err := fetches.Err0(); err != nil {
		t.Fatalf("bob consuming in group bg with --consumer's ACLs: %v", err)
	}
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "by bob" {
		t.Fatalf("bob consumed %v, want his record", recs)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("bob committing in group bg: %v", err)
	}
	consumer.Close()

	// list and its filters.
	all := []string{
		"TOPIC bt LITERAL User:bob * READ ALLOW",
		"TOPIC bt LITERAL User:bob * WRITE ALLOW",
		"TOPIC bt LITERAL User:bob * CREATE ALLOW",
		"TOPIC bt LITERAL User:bob * DESCRIBE ALLOW",
		"TOPIC orders LITERAL User:alice * WRITE ALLOW",
		"TOPIC orders LITERAL User:alice * DESCRIBE ALLOW",
		"TOPIC pre- PREFIXED User:alice * WRITE ALLOW",
		"TOPIC pre- PREFIXED User:alice * DESCRIBE ALLOW",
		"TOPIC pre-x LITERAL User:alice 127.0.0.1 WRITE DENY",
		"GROUP bg LITERAL User:bob * READ ALLOW",
	}
	c.ok(aclTable(t, "", all...), acl("list")...)
	c.ok(aclTable(t, "", all[4:6]...), acl("list", "--topic", "orders")...)
	c.ok(aclTable(t, "", all[4:6]...), acl("list", "--topic", "orders", "--resource-pattern-type", "any")...)
	c.ok(aclTable(t, "", all[9]), acl("list", "--group", "bg")...)
	c.ok(aclTable(t, "", all[4], all[5], all[9]), acl("list", "--topic", "orders", "--group", "bg")...)
	c.ok(aclTable(t, "", all[6:8]...), acl("list", "--resource-pattern-type", "prefixed")...)
	c.ok(aclTable(t, ""), acl("list", "--topic", "pre-", "--resource-pattern-type", "literal")...)
	c.ok(aclTable(t, "", all[6:9]...), acl("list", "--topic", "pre-x", "--resource-pattern-type", "match")...)
	c.ok(aclTable(t, "", all[0], all[1], all[2], all[3], all[9]), acl("list", "--principal", "User:bob")...)
	c.ok(aclTable(t, "", all[4], all[6], all[8]), acl("list", "--principal", "User:alice", "--operation", "write")...)
	c.ok(aclTable(t, ""), acl("list", "--cluster")...)

	// delete: narrowed by principal and operation, with --force.
	c.ok(aclTable(t, "Deleted", all[2]),
		acl("delete", "--topic", "bt", "--allow-principal", "User:bob", "--operation", "create", "--force")...)
	c.ok("No ACLs match; nothing deleted.\n", acl("delete", "--topic", "bt", "--deny-principal", "User:bob", "--force")...)
	c.ok("No ACLs match; nothing deleted.\n", acl("delete", "--topic", "nothing-here")...)

	// delete without --force: no answer refuses, "n" keeps, "y" deletes.
	out, errOut, err := c.run("", acl("delete", "--topic", "orders")...)
	if err == nil || !strings.Contains(err.Error(), "--force") || out != "" {
		t.Fatalf("delete without --force nor an answer: %v (stdout %q), want an error naming --force", err, out)
	}
	if want := aclTable(t, "About to delete", all[4:6]...); !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "(y/n)") {
		t.Fatalf("delete's question:\n%s\nwant it to start with\n%s", errOut, want)
	}
	if out, _, err := c.run("n\n", acl("delete", "--topic", "orders")...); err != nil || out != "Not confirmed; nothing deleted.\n" {
		t.Fatalf("delete answered n: %q, %v", out, err)
	}
	c.ok(aclTable(t, "", all[4:6]...), acl("list", "--topic", "orders")...)
	if err := produceAs(ctx, t, b.Addr, "alice", "orders"); err != nil {
		t.Fatalf("alice producing after a delete answered n: %v", err)
	}
	out, errOut, err = c.run("Y\n", acl("delete", "--topic", "orders")...)
	if err != nil || out != aclTable(t, "Deleted", all[4:6]...) || !strings.Contains(errOut, "(y/n)") {
		t.Fatalf("delete answered Y: %v\nstdout %q\nstderr %q", err, out, errOut)
	}
	c.ok(aclTable(t, ""), acl("list", "--topic", "orders")...)
	if err := produceAs(ctx, t, b.Addr, "alice", "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice producing after her ACLs on orders were deleted: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Deleting the DENY lets the prefixed ALLOW apply to pre-x.
	c.ok(aclTable(t, "Deleted", all[8]), acl("delete", "--topic", "pre-x", "--force")...)
	if err := produceAs(ctx, t, b.Addr, "alice", "pre-x"); err != nil {
		t.Fatalf("alice producing to pre-x once the DENY is deleted: %v", err)
	}

	// The broker's refusals are the command's errors, with Kafka's name
	// and message. bob is no super user.
	bob := []string{"--command-config", props["bob"]}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"acl", "list"}, "DescribeAcls needs DESCRIBE on the cluster"},
		{[]string{"acl", "create", "--allow-principal", "User:bob", "--operation", "All", "--topic", "*"}, "CreateAcls needs ALTER on the cluster"},
		{[]string{"acl", "delete", "--topic", "bt", "--force"}, "DeleteAcls needs ALTER on the cluster"},
		{[]string{"acl", "delete", "--topic", "bt"}, "DescribeAcls needs DESCRIBE on the cluster"},
	} {
		out, _, err := c.run("y\n", append(tc.args, bob...)...)
		if !errors.Is(err, kerr.ClusterAuthorizationFailed) || !strings.Contains(err.Error(), "CLUSTER_AUTHORIZATION_FAILED") ||
			!strings.Contains(err.Error(), tc.msg) || out != "" {
			t.Errorf("samsa %s as bob: %v (stdout %q), want CLUSTER_AUTHORIZATION_FAILED (%s)", strings.Join(tc.args, " "), err, out, tc.msg)
		}
	}
	// An ACL the broker finds invalid.
	_, _, err = c.run("", acl("create", "--allow-principal", "User:alice", "--allow-host", "", "--operation", "read", "--topic", "orders")...)
	if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "INVALID_REQUEST") || !strings.Contains(err.Error(), "host") {
		t.Errorf("creating an ACL with an empty host: %v, want INVALID_REQUEST about the host", err)
	}
	// Nothing changed.
	c.ok(aclTable(t, "", all[0], all[1], all[3], all[6], all[7], all[9]), acl("list")...)
}

// Without an authorizer the ACL requests answer SECURITY_DISABLED, which
// each subcommand reports.
func TestACLSecurityDisabled(t *testing.T) {
	b := samsatest.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}
	for _, args := range [][]string{
		{"acl", "list"},
		{"acl", "list", "--topic", "t", "--principal", "User:a"},
		{"acl", "create", "--allow-principal", "User:a", "--operation", "Read", "--operation", "Describe", "--topic", "t", "--group", "g"},
		{"acl", "delete", "--topic", "t", "--force"},
		{"acl", "delete", "--topic", "t"},
	} {
		out, _, err := c.run("y\n", args...)
		if !errors.Is(err, kerr.SecurityDisabled) || !strings.Contains(err.Error(), "SECURITY_DISABLED") ||
			!strings.Contains(err.Error(), "No Authorizer is configured") || out != "" {
			t.Errorf("samsa %s: %v (stdout %q), want SECURITY_DISABLED (No Authorizer is configured ...)", strings.Join(args, " "), err, out)
		}
		// One error for the whole request, not one per ACL or filter.
		if err != nil && strings.Count(err.Error(), "SECURITY_DISABLED") != 1 {
			t.Errorf("samsa %s: %v, want SECURITY_DISABLED once", strings.Join(args, " "), err)
		}
	}
}

// Bad flags are refused before connecting, with a message saying what is
// wrong.
func TestACLFlagErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Nothing listens there: a command that connected would time out.
	c := &e2eCLI{t: t, ctx: ctx, addr: "127.0.0.1:1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "--allow-principal", "User:a", "--operation", "Read"}, "name a resource with --topic"},
		{[]string{"create", "--topic", "t", "--operation", "Read"}, "--allow-principal or --deny-principal"},
		{[]string{"create", "--topic", "t", "--allow-principal", "User:a"}, "name the operations with --operation"},
		{[]string{"create", "--topic", "t", "--allow-principal", "User:a", "--operation", "Reed"}, `invalid --operation "Reed"`},
		{[]string{"create", "--topic", "t", "--allow-principal", "alice", "--operation", "Read"}, `invalid --allow-principal "alice": want Type:name`},
		{[]string{"create", "--topic", "t", "--deny-principal", "User:", "--operation", "Read"}, `invalid --deny-principal "User:"`},
		{[]string{"create", "--topic", "t", "--allow-principal", "User:a", "--operation", "Read", "--resource-pattern-type", "match"}, `invalid --resource-pattern-type "match": want literal or prefixed`},
		{[]string{"create", "--topic", "t", "--allow-principal", "User:a", "--operation", "Read", "--resource-pattern-type", "glob"}, `invalid --resource-pattern-type "glob"`},
		{[]string{"create", "--group", "g", "--allow-principal", "User:a", "--operation", "Write"}, "operation WRITE does not apply to GROUP resources"},
		{[]string{"create", "--cluster", "--allow-principal", "User:a", "--operation", "Read"}, "operation READ does not apply to CLUSTER resources"},
		{[]string{"create", "--cluster", "--allow-principal", "User:a", "--operation", "Alter", "--resource-pattern-type", "prefixed"}, "--cluster takes only --resource-pattern-type literal"},
		{[]string{"create", "--topic", "t", "--allow-principal", "User:a", "--deny-host", "10.0.0.1", "--operation", "Read"}, "--deny-host goes with --deny-principal"},
		{[]string{"create", "--consumer", "--topic", "t", "--allow-principal", "User:a"}, "--consumer needs the consumer groups"},
		{[]string{"create", "--producer", "--group", "g", "--allow-principal", "User:a"}, "--producer and --consumer need the topics"},
		{[]string{"create", "--producer", "--topic", "t", "--group", "g", "--allow-principal", "User:a"}, "--group goes with --consumer"},
		{[]string{"create", "--producer", "--topic", "t", "--allow-principal", "User:a", "--operation", "Read"}, "--operation does not go with --producer"},
		{[]string{"create", "--producer", "--topic", "t", "--cluster", "--allow-principal", "User:a"}, "--cluster does not go with --producer"},
		{[]string{"create", "--topic", "t", "--allow-principal", "User:a", "--operation", "Read", "--force"}, "unknown flag: --force"},
		{[]string{"list", "--principal", "alice"}, `invalid --principal "alice"`},
		{[]string{"list", "--allow-principal", "User:a"}, "unknown flag: --allow-principal"},
		{[]string{"list", "--cluster", "--resource-pattern-type", "prefixed"}, "--cluster does not go with --resource-pattern-type prefixed"},
		{[]string{"list", "extra"}, `unknown command "extra"`},
		{[]string{"delete", "--force"}, "name a resource with --topic"},
		{[]string{"delete", "--topic", "t", "--allow-host", "10.0.0.1", "--force"}, "--allow-host goes with --allow-principal"},
		{[]string{"delete", "--topic", "t", "--operation", "any", "--force"}, `invalid --operation "any"`},
		{[]string{"delete", "--topic", "t", "--resource-pattern-type", "nope", "--force"}, "want literal, prefixed, any or match"},
	} {
		_, _, err := c.run("", append([]string{"acl"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("samsa acl %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestACLParseOperations(t *testing.T) {
	tests := []struct {
		in      []string
		want    []kmsg.ACLOperation
		wantErr bool
	}{
		{nil, nil, false},
		{[]string{"Read"}, []kmsg.ACLOperation{kmsg.ACLOperationRead}, false},
		{[]string{"describe", "READ", "Describe"}, []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe}, false},
		{[]string{"DescribeConfigs", "alter_configs", "Idempotent-Write", " ClusterAction "},
			[]kmsg.ACLOperation{kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite}, false},
		{[]string{"All", "write", "create", "delete", "alter"},
			[]kmsg.ACLOperation{kmsg.ACLOperationAll, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter}, false},
		{[]string{"Any"}, nil, true},
		{[]string{"CreateTokens"}, nil, true},
		{[]string{"Read", ""}, nil, true},
	}
	for _, tt := range tests {
		got, err := parseACLOperations(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseACLOperations(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestACLParsePattern(t *testing.T) {
	tests := []struct {
		in     string
		filter bool
		want   kadm.ACLPattern
		ok     bool
	}{
		{"literal", false, kadm.ACLPatternLiteral, true},
		{"PREFIXED", false, kadm.ACLPatternPrefixed, true},
		{"any", false, 0, false},
		{"match", false, 0, false},
		{"Any", true, kadm.ACLPatternAny, true},
		{"match", true, kadm.ACLPatternMatch, true},
		{"Literal", true, kadm.ACLPatternLiteral, true},
		{"", true, 0, false},
		{"regex", true, 0, false},
	}
	for _, tt := range tests {
		got, err := parseACLPattern(tt.in, tt.filter)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseACLPattern(%q, %v) = %v, %v; want %v, ok %v", tt.in, tt.filter, got, err, tt.want, tt.ok)
		}
	}
}

func TestACLCreateSelections(t *testing.T) {
	ops := func(o ...kmsg.ACLOperation) []kmsg.ACLOperation { return o }
	const (
		read     = kmsg.ACLOperationRead
		write    = kmsg.ACLOperationWrite
		create   = kmsg.ACLOperationCreate
		describe = kmsg.ACLOperationDescribe
		all      = kmsg.ACLOperationAll
	)
	alice := []string{"User:alice"}
	tests := []struct {
		name string
		f    aclFlags
		want []aclSelection
	}{
		{"one selection per resource type",
			aclFlags{topics: []string{"a", "*"}, groups: []string{"g"}, pattern: "literal", allow: alice, deny: []string{"User:bob"},
				denyHosts: []string{"10.0.0.1"}, operations: []string{"describe", "All"}},
			[]aclSelection{
				{Resources: aclResources{Topics: []string{"a", "*"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Deny: []string{"User:bob"},
					DenyHosts: []string{"10.0.0.1"}, Ops: ops(all, describe)},
				{Resources: aclResources{Groups: []string{"g"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Deny: []string{"User:bob"},
					DenyHosts: []string{"10.0.0.1"}, Ops: ops(all, describe)},
			}},
		{"cluster and transactional IDs",
			aclFlags{cluster: true, txnIDs: []string{"tx"}, pattern: "literal", allow: alice, operations: []string{"Describe"}},
			[]aclSelection{
				{Resources: aclResources{Cluster: true}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(describe)},
				{Resources: aclResources{TxnIDs: []string{"tx"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(describe)},
			}},
		{"prefixed",
			aclFlags{topics: []string{"pre-"}, pattern: "Prefixed", allow: alice, operations: []string{"read"}},
			[]aclSelection{{Resources: aclResources{Topics: []string{"pre-"}}, Pattern: kadm.ACLPatternPrefixed, Allow: alice, Ops: ops(read)}}},
		{"producer",
			aclFlags{producer: true, topics: []string{"t"}, txnIDs: []string{"tx"}, pattern: "literal", allow: alice},
			[]aclSelection{
				{Resources: aclResources{Topics: []string{"t"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(write, create, describe)},
				{Resources: aclResources{TxnIDs: []string{"tx"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(write, describe)},
			}},
		{"consumer",
			aclFlags{consumer: true, topics: []string{"t"}, groups: []string{"g"}, pattern: "literal", allow: alice},
			[]aclSelection{
				{Resources: aclResources{Topics: []string{"t"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(read, describe)},
				{Resources: aclResources{Groups: []string{"g"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(read)},
			}},
		{"producer and consumer",
			aclFlags{producer: true, consumer: true, topics: []string{"t"}, groups: []string{"g"}, pattern: "literal", allow: alice},
			[]aclSelection{
				{Resources: aclResources{Topics: []string{"t"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(read, write, create, describe)},
				{Resources: aclResources{Groups: []string{"g"}}, Pattern: kadm.ACLPatternLiteral, Allow: alice, Ops: ops(read)},
			}},
		{"no resource", aclFlags{pattern: "literal", allow: alice, operations: []string{"read"}}, nil},
		{"consumer without topic", aclFlags{consumer: true, groups: []string{"g"}, pattern: "literal", allow: alice}, nil},
		{"transactional ID with consumer alone", aclFlags{consumer: true, topics: []string{"t"}, groups: []string{"g"}, txnIDs: []string{"x"},
			pattern: "literal", allow: alice}, nil},
		{"IdempotentWrite on a topic", aclFlags{topics: []string{"t"}, pattern: "literal", allow: alice, operations: []string{"IdempotentWrite"}}, nil},
		{"Read on a transactional ID", aclFlags{txnIDs: []string{"x"}, pattern: "literal", allow: alice, operations: []string{"Read"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.createSelections()
			if (err != nil) != (tt.want == nil) {
				t.Fatalf("error %v, want error %v", err, tt.want == nil)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestACLFilterSelections(t *testing.T) {
	alice := []string{"User:alice"}
	tests := []struct {
		name   string
		delete bool
		f      aclFlags
		want   aclSelection
		bad    bool
	}{
		{"list everything: any pattern", false, aclFlags{pattern: "literal"}, aclSelection{Pattern: kadm.ACLPatternAny}, false},
		{"list everything prefixed", false, aclFlags{pattern: "prefixed", patternSet: true}, aclSelection{Pattern: kadm.ACLPatternPrefixed}, false},
		{"list a topic: literal", false, aclFlags{topics: []string{"t"}, pattern: "literal"},
			aclSelection{Resources: aclResources{Topics: []string{"t"}}, Pattern: kadm.ACLPatternLiteral}, false},
		{"list a principal's", false, aclFlags{principals: alice, pattern: "match", topics: []string{"t"}, operations: []string{"write"}},
			aclSelection{Resources: aclResources{Topics: []string{"t"}}, Pattern: kadm.ACLPatternMatch, Allow: alice, Deny: alice,
				Ops: []kmsg.ACLOperation{kmsg.ACLOperationWrite}}, false},
		{"delete a topic's", true, aclFlags{topics: []string{"t"}, pattern: "literal"},
			aclSelection{Resources: aclResources{Topics: []string{"t"}}, Pattern: kadm.ACLPatternLiteral}, false},
		{"delete some", true, aclFlags{cluster: true, pattern: "any", allow: alice, allowHosts: []string{"h"}, operations: []string{"Alter"}},
			aclSelection{Resources: aclResources{Cluster: true}, Pattern: kadm.ACLPatternAny, Allow: alice, AllowHosts: []string{"h"},
				Ops: []kmsg.ACLOperation{kmsg.ACLOperationAlter}}, false},
		{"delete without a resource", true, aclFlags{pattern: "literal", allow: alice}, aclSelection{}, true},
		{"delete with a bad principal", true, aclFlags{topics: []string{"t"}, pattern: "literal", deny: []string{":x"}}, aclSelection{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got aclSelection
			var err error
			if tt.delete {
				got, err = tt.f.deleteSelection()
			} else {
				got, err = tt.f.listSelection()
			}
			if (err != nil) != tt.bad {
				t.Fatalf("error %v, want error %v", err, tt.bad)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestACLPrint(t *testing.T) {
	alice := aclEntry{kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice", "*",
		kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow}
	aliceDescribe := alice
	aliceDescribe.Operation = kmsg.ACLOperationDescribe
	group := aclEntry{kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, "User:bob", "*",
		kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow}
	deny := aclEntry{kmsg.ACLResourceTypeTopic, "a", kmsg.ACLResourcePatternTypePrefixed, "User:alice", "10.0.0.1",
		kmsg.ACLOperationAll, kmsg.ACLPermissionTypeDeny}
	cluster := aclEntry{kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, "User:ops", "*",
		kmsg.ACLOperationIdempotentWrite, kmsg.ACLPermissionTypeAllow}
	tests := []struct {
		name  string
		title string
		in    []aclEntry
		want  string
	}{
		{"empty list", "", nil, "TYPE  NAME  PATTERN  PRINCIPAL  HOST  OPERATION  PERMISSION\n"},
		{"one, with a title", "Deleted", []aclEntry{alice}, "" +
			"Deleted 1 ACL:\n" +
			"TYPE   NAME    PATTERN  PRINCIPAL   HOST  OPERATION  PERMISSION\n" +
			"TOPIC  orders  LITERAL  User:alice  *     WRITE      ALLOW\n"},
		{"sorted by type, name, pattern, principal, host, operation; duplicates once", "Created",
			[]aclEntry{group, aliceDescribe, cluster, alice, deny, alice}, "" +
				"Created 5 ACLs:\n" +
				"TYPE     NAME           PATTERN   PRINCIPAL   HOST      OPERATION         PERMISSION\n" +
				"TOPIC    a              PREFIXED  User:alice  10.0.0.1  ALL               DENY\n" +
				"TOPIC    orders         LITERAL   User:alice  *         WRITE             ALLOW\n" +
				"TOPIC    orders         LITERAL   User:alice  *         DESCRIBE          ALLOW\n" +
				"GROUP    g              LITERAL   User:bob    *         READ              ALLOW\n" +
				"CLUSTER  kafka-cluster  LITERAL   User:ops    *         IDEMPOTENT_WRITE  ALLOW\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]aclEntry(nil), tt.in...)
			var b bytes.Buffer
			if err := printACLs(&b, tt.title, tt.in); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", b.String(), tt.want)
			}
			if !reflect.DeepEqual(in, tt.in) {
				t.Fatal("printACLs changed its argument")
			}
		})
	}
	if got, want := deny.String(), "User:alice DENY ALL on TOPIC:PREFIXED:a from host 10.0.0.1"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestACLFailuresErr(t *testing.T) {
	acl := aclEntry{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", "*",
		kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow}
	acl2 := acl
	acl2.Operation = kmsg.ACLOperationWrite
	disabled := kafkaErr(kerr.SecurityDisabled, "no authorizer")
	invalid := kafkaErr(kerr.InvalidRequest, "bad host")
	tests := []struct {
		name   string
		failed []aclFailure
		want   string
	}{
		{"none", nil, ""},
		{"one", []aclFailure{{acl, invalid}}, "creating ACL User:a ALLOW READ on TOPIC:LITERAL:t from host *: " + invalid.Error()},
		{"the same error for all: once", []aclFailure{{acl, disabled}, {acl2, disabled}},
			"creating 2 ACLs (User:a ALLOW READ on TOPIC:LITERAL:t from host *, ...): " + disabled.Error()},
		{"filters", []aclFailure{{err: disabled}, {err: disabled}, {acl2, invalid}},
			"creating ACLs: " + disabled.Error() + "\ncreating ACL User:a ALLOW WRITE on TOPIC:LITERAL:t from host *: " + invalid.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := aclFailuresErr("creating", tt.failed)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got  %v\nwant %s", err, tt.want)
			}
			if !errors.Is(err, tt.failed[0].err) {
				t.Fatalf("%v does not wrap %v", err, tt.failed[0].err)
			}
		})
	}
}

func TestACLConfirm(t *testing.T) {
	found := []aclEntry{{kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, "User:a", "*",
		kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow}}
	tests := []struct {
		stdin   string
		want    bool
		wantErr bool
	}{
		{"y\n", true, false},
		{" YES \n", true, false},
		{"y", true, false},
		{"n\n", false, false},
		{"\n", false, false},
		{"yes please\n", false, false},
		{"", false, true},
	}
	for _, tt := range tests {
		var w bytes.Buffer
		got, err := confirmACLDelete(strings.NewReader(tt.stdin), &w, found)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("answer %q: %v, %v; want %v, error %v", tt.stdin, got, err, tt.want, tt.wantErr)
		}
		if !strings.HasPrefix(w.String(), "About to delete 1 ACL:\nTYPE") || !strings.Contains(w.String(), "(y/n) ") {
			t.Errorf("answer %q: asked %q", tt.stdin, w.String())
		}
	}
}
