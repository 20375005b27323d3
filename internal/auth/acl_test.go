package auth

import (
	"testing"

	"github.com/samsa-io/samsa/internal/meta"
)

const (
	topic   = meta.ResourceTopic
	group   = meta.ResourceGroup
	cluster = meta.ResourceCluster
	literal = meta.PatternLiteral
	prefix  = meta.PatternPrefixed
	allow   = meta.PermissionAllow
	deny    = meta.PermissionDeny
)

func acl(typ meta.ResourceType, name string, pat meta.PatternType, principal, host string, op meta.Operation, perm meta.Permission) meta.ACL {
	return meta.ACL{ResourceType: typ, ResourceName: name, PatternType: pat, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func TestAuthorize(t *testing.T) {
	acls := []meta.ACL{
		acl(topic, "orders", literal, "User:alice", "*", meta.OpRead, allow),
		acl(topic, "orders", literal, "User:bob", "10.0.0.1", meta.OpWrite, allow),
		acl(topic, "pay-", prefix, "User:carol", "*", meta.OpAll, allow),
		acl(topic, "pay-secret", literal, "User:carol", "*", meta.OpRead, deny),
		acl(topic, "*", literal, "User:*", "*", meta.OpDescribe, allow),
		acl(topic, "logs", literal, "User:*", "*", meta.OpAll, deny),
		acl(topic, "cfg", literal, "User:dave", "*", meta.OpAlterConfigs, allow),
		acl(group, "g", literal, "User:alice", "*", meta.OpRead, allow),
		acl(cluster, meta.ClusterResourceName, literal, "User:broker", "*", meta.OpClusterAction, allow),
	}
	x := NewACLs(acls, []string{"User:admin"}, false)
	open := NewACLs(acls, nil, true)
	for _, c := range []struct {
		x         *ACLs
		principal string
		host      string
		op        meta.Operation
		typ       meta.ResourceType
		name      string
		want      bool
	}{
		{x, "User:alice", "1.2.3.4", meta.OpRead, topic, "orders", true},
		{x, "User:alice", "1.2.3.4", meta.OpWrite, topic, "orders", false},
		{x, "User:alice", "1.2.3.4", meta.OpDescribe, topic, "orders", true}, // implied by Read and by the * ACL
		{x, "User:alice", "1.2.3.4", meta.OpRead, topic, "orders2", false},
		{x, "User:bob", "10.0.0.1", meta.OpWrite, topic, "orders", true},
		{x, "User:bob", "10.0.0.2", meta.OpWrite, topic, "orders", false}, // host
		{x, "User:carol", "h", meta.OpWrite, topic, "pay-in", true},       // prefixed ALL
		{x, "User:carol", "h", meta.OpRead, topic, "pay-secret", false},   // deny wins
		{x, "User:carol", "h", meta.OpWrite, topic, "pay-secret", true},
		{x, "User:carol", "h", meta.OpRead, topic, "pay", false}, // shorter than the prefix
		{x, "User:carol", "h", meta.OpRead, topic, "logs", false},
		{x, "User:admin", "h", meta.OpRead, topic, "logs", true}, // super user beats deny
		{x, "User:zed", "h", meta.OpDescribe, topic, "anything", true},
		{x, "User:zed", "h", meta.OpDescribe, topic, "logs", false}, // DENY ALL for User:*
		{x, "User:dave", "h", meta.OpDescribeConfigs, topic, "cfg", true},
		{x, "User:dave", "h", meta.OpAlterConfigs, topic, "cfg", true},
		{x, "User:dave", "h", meta.OpAlter, topic, "cfg", false},
		{x, "User:alice", "h", meta.OpRead, group, "g", true},
		{x, "User:alice", "h", meta.OpDelete, group, "g", false},
		{x, "User:alice", "h", meta.OpDescribe, group, "g", true},
		{x, "User:alice", "h", meta.OpRead, group, "other", false},
		{x, "User:broker", "h", meta.OpClusterAction, cluster, meta.ClusterResourceName, true},
		{x, "User:alice", "h", meta.OpClusterAction, cluster, meta.ClusterResourceName, false},
		{x, "User:alice", "h", meta.OpDescribe, meta.ResourceTransactionalID, "t", false},
		// allow.everyone.if.no.acl.found: only where no ACL covers the resource.
		{open, "User:zed", "h", meta.OpDescribe, meta.ResourceTransactionalID, "t", true},
		{open, "User:zed", "h", meta.OpRead, group, "other", true},
		{open, "User:zed", "h", meta.OpRead, group, "g", false},
		{open, "User:zed", "h", meta.OpRead, topic, "orders", false}, // the * ACL covers every topic
		{open, "User:admin", "h", meta.OpRead, topic, "orders", false},
	} {
		if got := c.x.Authorize(c.principal, c.host, c.op, c.typ, c.name); got != c.want {
			t.Errorf("%s from %s: %v %v %q = %v, want %v", c.principal, c.host, c.op, c.typ, c.name, got, c.want)
		}
	}
}

func TestAuthorizeAny(t *testing.T) {
	for _, c := range []struct {
		acls []meta.ACL
		want bool
	}{
		{nil, false},
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", meta.OpWrite, allow)}, true},
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", meta.OpRead, allow)}, false},
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", meta.OpWrite, allow),
			acl(topic, "t", literal, "User:p", "*", meta.OpWrite, deny)}, false},
		{[]meta.ACL{acl(topic, "t-", prefix, "User:p", "*", meta.OpWrite, allow),
			acl(topic, "t-1", literal, "User:p", "*", meta.OpWrite, deny)}, true}, // t-2 stays writable
		{[]meta.ACL{acl(topic, "t-1", prefix, "User:p", "*", meta.OpWrite, allow),
			acl(topic, "t-", prefix, "User:*", "*", meta.OpAll, deny)}, false},
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", meta.OpWrite, allow),
			acl(topic, "*", literal, "User:p", "*", meta.OpWrite, deny)}, false},
		{[]meta.ACL{acl(topic, "t", literal, "User:q", "*", meta.OpWrite, allow)}, false},
	} {
		if got := NewACLs(c.acls, nil, false).AuthorizeAny("User:p", "h", meta.OpWrite, topic); got != c.want {
			t.Errorf("AuthorizeAny(Write Topic) with %+v = %v, want %v", c.acls, got, c.want)
		}
	}
	if !NewACLs(nil, nil, true).AuthorizeAny("User:p", "h", meta.OpWrite, topic) {
		t.Error("allow.everyone.if.no.acl.found without ACLs refuses")
	}
	if !NewACLs(nil, []string{"User:p"}, false).AuthorizeAny("User:p", "h", meta.OpWrite, topic) {
		t.Error("a super user is refused")
	}
}

func TestACLFilter(t *testing.T) {
	str := func(s string) *string { return &s }
	a := acl(topic, "pay-", prefix, "User:carol", "*", meta.OpRead, allow)
	b := acl(topic, "pay-in", literal, "User:carol", "*", meta.OpRead, allow)
	w := acl(topic, "*", literal, "User:*", "*", meta.OpRead, allow)
	g := acl(group, "pay-in", literal, "User:carol", "*", meta.OpRead, allow)
	any := ACLFilter{ResourceType: meta.ResourceAny, PatternType: meta.PatternAny, Operation: meta.OpAny, Permission: meta.PermissionAny}
	for _, c := range []struct {
		f    func(*ACLFilter)
		want [4]bool // a, b, w, g
	}{
		{func(*ACLFilter) {}, [4]bool{true, true, true, true}},
		{func(f *ACLFilter) { f.ResourceType = topic }, [4]bool{true, true, true, false}},
		{func(f *ACLFilter) { f.ResourceName = str("pay-in") }, [4]bool{false, true, false, true}},
		{func(f *ACLFilter) { f.PatternType = meta.PatternMatch; f.ResourceName = str("pay-in") }, [4]bool{true, true, true, true}},
		{func(f *ACLFilter) { f.PatternType = meta.PatternMatch; f.ResourceName = str("other") }, [4]bool{false, false, true, false}},
		{func(f *ACLFilter) { f.PatternType = prefix }, [4]bool{true, false, false, false}},
		{func(f *ACLFilter) { f.PatternType = literal; f.ResourceName = str("*") }, [4]bool{false, false, true, false}},
		{func(f *ACLFilter) { f.Principal = str("User:*") }, [4]bool{false, false, true, false}},
		{func(f *ACLFilter) { f.Operation = meta.OpWrite }, [4]bool{}},
		{func(f *ACLFilter) { f.Permission = deny }, [4]bool{}},
		{func(f *ACLFilter) { f.Host = str("*") }, [4]bool{true, true, true, true}},
	} {
		f := any
		c.f(&f)
		for i, x := range []meta.ACL{a, b, w, g} {
			if got := f.Matches(x); got != c.want[i] {
				t.Errorf("filter %+v on %+v: %v, want %v", f, x, got, c.want[i])
			}
		}
	}
	if ValidateACLFilter(any) != nil {
		t.Error("the match-all filter is refused")
	}
	bad := any
	bad.Operation = 99
	if ValidateACLFilter(bad) == nil {
		t.Error("operation 99 accepted")
	}
}

func TestACLsFailClosed(t *testing.T) {
	x := NewACLs(nil, []string{"User:admin"}, true).FailClosed()
	if x.Authorize("User:a", "h", meta.OpRead, topic, "t") || x.AuthorizeAny("User:a", "h", meta.OpWrite, topic) {
		t.Error("a fail-closed index allows a non-super user")
	}
	if !x.Authorize("User:admin", "h", meta.OpRead, topic, "t") {
		t.Error("a fail-closed index refuses a super user")
	}
}
