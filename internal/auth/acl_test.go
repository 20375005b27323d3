package auth

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/meta"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	literal = kmsg.ACLResourcePatternTypeLiteral
	prefix  = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
)

func acl(typ kmsg.ACLResourceType, name string, pat kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) meta.ACL {
	return meta.ACL{ResourceType: typ, ResourceName: name, PatternType: pat, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func TestAuthorize(t *testing.T) {
	acls := []meta.ACL{
		acl(topic, "orders", literal, "User:alice", "*", kmsg.ACLOperationRead, allow),
		acl(topic, "orders", literal, "User:bob", "10.0.0.1", kmsg.ACLOperationWrite, allow),
		acl(topic, "pay-", prefix, "User:carol", "*", kmsg.ACLOperationAll, allow),
		acl(topic, "pay-secret", literal, "User:carol", "*", kmsg.ACLOperationRead, deny),
		acl(topic, "*", literal, "User:*", "*", kmsg.ACLOperationDescribe, allow),
		acl(topic, "logs", literal, "User:*", "*", kmsg.ACLOperationAll, deny),
		acl(topic, "cfg", literal, "User:dave", "*", kmsg.ACLOperationAlterConfigs, allow),
		acl(group, "g", literal, "User:alice", "*", kmsg.ACLOperationRead, allow),
		acl(cluster, meta.ClusterResourceName, literal, "User:broker", "*", kmsg.ACLOperationClusterAction, allow),
	}
	x := NewACLs(acls, []string{"User:admin"}, false)
	open := NewACLs(acls, nil, true)
	for _, c := range []struct {
		x         *ACLs
		principal string
		host      string
		op        kmsg.ACLOperation
		typ       kmsg.ACLResourceType
		name      string
		want      bool
	}{
		{x, "User:alice", "1.2.3.4", kmsg.ACLOperationRead, topic, "orders", true},
		{x, "User:alice", "1.2.3.4", kmsg.ACLOperationWrite, topic, "orders", false},
		{x, "User:alice", "1.2.3.4", kmsg.ACLOperationDescribe, topic, "orders", true}, // implied by Read and by the * ACL
		{x, "User:alice", "1.2.3.4", kmsg.ACLOperationRead, topic, "orders2", false},
		{x, "User:bob", "10.0.0.1", kmsg.ACLOperationWrite, topic, "orders", true},
		{x, "User:bob", "10.0.0.2", kmsg.ACLOperationWrite, topic, "orders", false}, // host
		{x, "User:carol", "h", kmsg.ACLOperationWrite, topic, "pay-in", true},       // prefixed ALL
		{x, "User:carol", "h", kmsg.ACLOperationRead, topic, "pay-secret", false},   // deny wins
		{x, "User:carol", "h", kmsg.ACLOperationWrite, topic, "pay-secret", true},
		{x, "User:carol", "h", kmsg.ACLOperationRead, topic, "pay", false}, // shorter than the prefix
		{x, "User:carol", "h", kmsg.ACLOperationRead, topic, "logs", false},
		{x, "User:admin", "h", kmsg.ACLOperationRead, topic, "logs", true}, // super user beats deny
		{x, "User:zed", "h", kmsg.ACLOperationDescribe, topic, "anything", true},
		{x, "User:zed", "h", kmsg.ACLOperationDescribe, topic, "logs", false}, // DENY ALL for User:*
		{x, "User:dave", "h", kmsg.ACLOperationDescribeConfigs, topic, "cfg", true},
		{x, "User:dave", "h", kmsg.ACLOperationAlterConfigs, topic, "cfg", true},
		{x, "User:dave", "h", kmsg.ACLOperationAlter, topic, "cfg", false},
		{x, "User:alice", "h", kmsg.ACLOperationRead, group, "g", true},
		{x, "User:alice", "h", kmsg.ACLOperationDelete, group, "g", false},
		{x, "User:alice", "h", kmsg.ACLOperationDescribe, group, "g", true},
		{x, "User:alice", "h", kmsg.ACLOperationRead, group, "other", false},
		{x, "User:broker", "h", kmsg.ACLOperationClusterAction, cluster, meta.ClusterResourceName, true},
		{x, "User:alice", "h", kmsg.ACLOperationClusterAction, cluster, meta.ClusterResourceName, false},
		{x, "User:alice", "h", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, "t", false},
		// allow.everyone.if.no.acl.found: only where no ACL covers the resource.
		{open, "User:zed", "h", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, "t", true},
		{open, "User:zed", "h", kmsg.ACLOperationRead, group, "other", true},
		{open, "User:zed", "h", kmsg.ACLOperationRead, group, "g", false},
		{open, "User:zed", "h", kmsg.ACLOperationRead, topic, "orders", false}, // the * ACL covers every topic
		{open, "User:admin", "h", kmsg.ACLOperationRead, topic, "orders", false},
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
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", kmsg.ACLOperationWrite, allow)}, true},
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", kmsg.ACLOperationRead, allow)}, false},
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", kmsg.ACLOperationWrite, allow),
			acl(topic, "t", literal, "User:p", "*", kmsg.ACLOperationWrite, deny)}, false},
		{[]meta.ACL{acl(topic, "t-", prefix, "User:p", "*", kmsg.ACLOperationWrite, allow),
			acl(topic, "t-1", literal, "User:p", "*", kmsg.ACLOperationWrite, deny)}, true}, // t-2 stays writable
		{[]meta.ACL{acl(topic, "t-1", prefix, "User:p", "*", kmsg.ACLOperationWrite, allow),
			acl(topic, "t-", prefix, "User:*", "*", kmsg.ACLOperationAll, deny)}, false},
		{[]meta.ACL{acl(topic, "t", literal, "User:p", "*", kmsg.ACLOperationWrite, allow),
			acl(topic, "*", literal, "User:p", "*", kmsg.ACLOperationWrite, deny)}, false},
		{[]meta.ACL{acl(topic, "t", literal, "User:q", "*", kmsg.ACLOperationWrite, allow)}, false},
	} {
		if got := NewACLs(c.acls, nil, false).AuthorizeAny("User:p", "h", kmsg.ACLOperationWrite, topic); got != c.want {
			t.Errorf("AuthorizeAny(Write Topic) with %+v = %v, want %v", c.acls, got, c.want)
		}
	}
	if !NewACLs(nil, nil, true).AuthorizeAny("User:p", "h", kmsg.ACLOperationWrite, topic) {
		t.Error("allow.everyone.if.no.acl.found without ACLs refuses")
	}
	if !NewACLs(nil, []string{"User:p"}, false).AuthorizeAny("User:p", "h", kmsg.ACLOperationWrite, topic) {
		t.Error("a super user is refused")
	}
}

func TestACLFilter(t *testing.T) {
	str := func(s string) *string { return &s }
	a := acl(topic, "pay-", prefix, "User:carol", "*", kmsg.ACLOperationRead, allow)
	b := acl(topic, "pay-in", literal, "User:carol", "*", kmsg.ACLOperationRead, allow)
	w := acl(topic, "*", literal, "User:*", "*", kmsg.ACLOperationRead, allow)
	g := acl(group, "pay-in", literal, "User:carol", "*", kmsg.ACLOperationRead, allow)
	any := ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	for _, c := range []struct {
		f    func(*ACLFilter)
		want [4]bool // a, b, w, g
	}{
		{func(*ACLFilter) {}, [4]bool{true, true, true, true}},
		{func(f *ACLFilter) { f.ResourceType = topic }, [4]bool{true, true, true, false}},
		{func(f *ACLFilter) { f.ResourceName = str("pay-in") }, [4]bool{false, true, false, true}},
		{func(f *ACLFilter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = str("pay-in") }, [4]bool{true, true, true, true}},
		{func(f *ACLFilter) { f.PatternType = kmsg.ACLResourcePatternTypeMatch; f.ResourceName = str("other") }, [4]bool{false, false, true, false}},
		{func(f *ACLFilter) { f.PatternType = prefix }, [4]bool{true, false, false, false}},
		{func(f *ACLFilter) { f.PatternType = literal; f.ResourceName = str("*") }, [4]bool{false, false, true, false}},
		{func(f *ACLFilter) { f.Principal = str("User:*") }, [4]bool{false, false, true, false}},
		{func(f *ACLFilter) { f.Operation = kmsg.ACLOperationWrite }, [4]bool{}},
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
