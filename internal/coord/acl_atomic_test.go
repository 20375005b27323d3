package coord

import (
	"fmt"
	"testing"

	"github.com/samsa-io/samsa/internal/meta"
)

// A CreateAcls request may name the same binding twice (Kafka answers
// SUCCESS for both): it is stored once, not refused by etcd as a key
// written twice in one transaction.
func TestCreateACLsDuplicateInOneRequest(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	cache := newCache(t, c)
	a := meta.ACL{ResourceType: meta.ResourceTopic, ResourceName: "orders", PatternType: meta.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: meta.OpRead, Permission: meta.PermissionAllow}
	other := a
	other.ResourceName = "payments"
	if err := c.CreateACLs(testCtx(t), []meta.ACL{a, other, a}); err != nil {
		t.Fatalf("CreateACLs with a binding given twice: %v", err)
	}
	if n := len(readYourWrites(t, cache, c).ACLs); n != 2 {
		t.Fatalf("%d ACLs stored, want 2", n)
	}
}

// A request's ACLs are written in one transaction (one etcd revision), as
// Kafka writes them in one atomic controller record batch: a failure
// leaves none of them stored.
func TestCreateAndDeleteACLsAtomic(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	cache := newCache(t, c)
	var acls []meta.ACL
	var keys []string
	for i := range 300 {
		a := meta.ACL{ResourceType: meta.ResourceTopic, ResourceName: fmt.Sprintf("t%d", i),
			PatternType: meta.PatternLiteral, Principal: "User:alice", Host: "*", Operation: meta.OpRead, Permission: meta.PermissionAllow}
		acls = append(acls, a)
		keys = append(keys, ACLKey(a))
	}
	before := readYourWrites(t, cache, c).Revision
	if err := c.CreateACLs(testCtx(t), acls); err != nil {
		t.Fatal(err)
	}
	s := readYourWrites(t, cache, c)
	if len(s.ACLs) != 300 || s.Revision != before+1 {
		t.Fatalf("%d ACLs stored at revision %d, want 300 in one transaction after %d", len(s.ACLs), s.Revision, before)
	}
	if err := c.DeleteACLs(testCtx(t), keys); err != nil {
		t.Fatal(err)
	}
	s2 := readYourWrites(t, cache, c)
	if len(s2.ACLs) != 0 || s2.Revision != s.Revision+1 {
		t.Fatalf("%d ACLs left at revision %d, want none in one transaction after %d", len(s2.ACLs), s2.Revision, s.Revision)
	}
}
