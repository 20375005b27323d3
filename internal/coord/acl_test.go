package coord

import (
	"errors"
	"testing"

	"github.com/samsa-io/samsa/internal/meta"
)

func TestACLsReachTheCache(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	cache := newCache(t, c)
	rev0 := cache.Snapshot().ACLRevision

	read := meta.ACL{ResourceType: meta.ResourceTopic, ResourceName: "orders", PatternType: meta.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: meta.OpRead, Permission: meta.PermissionAllow}
	deny := read
	deny.Permission = meta.PermissionDeny
	if err := c.CreateACLs(testCtx(t), []meta.ACL{read, deny}); err != nil {
		t.Fatal(err)
	}
	s := readYourWrites(t, cache, c)
	if len(s.ACLs) != 2 || s.ACLs[ACLKey(read)] != read || s.ACLs[ACLKey(deny)] != deny {
		t.Fatalf("cached ACLs %+v", s.ACLs)
	}
	if s.ACLRevision <= rev0 {
		t.Fatalf("ACL revision %d after a create, was %d", s.ACLRevision, rev0)
	}
	// Creating an existing ACL is idempotent.
	if err := c.CreateACLs(testCtx(t), []meta.ACL{read}); err != nil {
		t.Fatal(err)
	}
	if s = readYourWrites(t, cache, c); len(s.ACLs) != 2 {
		t.Fatalf("ACLs after re-creating one: %+v", s.ACLs)
	}
	rev1 := s.ACLRevision
	if err := c.DeleteACLs(testCtx(t), []string{ACLKey(deny), ACLKey(deny)}); err != nil {
		t.Fatal(err)
	}
	s = readYourWrites(t, cache, c)
	if len(s.ACLs) != 1 || s.ACLs[ACLKey(read)] != read || s.ACLRevision <= rev1 {
		t.Fatalf("after delete: ACLs %+v at revision %d (was %d)", s.ACLs, s.ACLRevision, rev1)
	}
	// A fresh cache reads them back.
	if s2 := newCache(t, c).Snapshot(); len(s2.ACLs) != 1 || s2.ACLs[ACLKey(read)] != read {
		t.Fatalf("fresh cache ACLs %+v", s2.ACLs)
	}

	// Invalid ACLs are refused before anything is written.
	bad := read
	bad.Operation = meta.OpAny
	if err := c.CreateACLs(testCtx(t), []meta.ACL{read, bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("create with an ANY operation: %v", err)
	}
}
