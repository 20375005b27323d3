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

// An ACL value that does not decode (a newer version's enum, a hand edit)
// is not dropped silently: the snapshot lists it in BadACLs, so that the
// authorizer can fail closed, until the key is deleted or fixed.
func TestBadACLsAreReported(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	cache := newCache(t, c)
	key := c.keys.abs(dirACLs + "bad")
	resp, err := c.etcd.Put(testCtx(t), key, `{"resource_type":"TOPIC","resource_name":"t","pattern_type":"LITERAL",`+
		`"principal":"User:a","host":"*","operation":"FLY","permission":"DENY"}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.WaitRevision(testCtx(t), resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	s := cache.Snapshot()
	if !s.BadACLs["bad"] || len(s.ACLs) != 0 {
		t.Fatalf("after a bad ACL: BadACLs %v, ACLs %v", s.BadACLs, s.ACLs)
	}
	if fresh := newCache(t, c).Snapshot(); !fresh.BadACLs["bad"] {
		t.Fatalf("a fresh cache does not report the bad ACL: %v", fresh.BadACLs)
	}
	if err := c.DeleteACLs(testCtx(t), []string{"bad"}); err != nil {
		t.Fatal(err)
	}
	if s := readYourWrites(t, cache, c); len(s.BadACLs) != 0 || s.ACLRevision < resp.Header.Revision {
		t.Fatalf("after deleting it: BadACLs %v", s.BadACLs)
	}
}
