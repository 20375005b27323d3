package coord

import (
	"errors"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/meta"
)

// An ACL whose strings are not valid UTF-8 is refused: JSON would store
// it changed (each invalid byte as the 3-byte U+FFFD), and the ACL read
// back would be another one, or, past MaxACLStringLen, a bad ACL that
// makes every broker fail closed.
func TestCreateACLsRefusesInvalidUTF8(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	cache := newCache(t, c)
	a := meta.ACL{ResourceType: meta.ResourceTopic, ResourceName: strings.Repeat("\xff", meta.MaxACLStringLen),
		PatternType: meta.PatternLiteral, Principal: "User:alice", Host: "*", Operation: meta.OpRead, Permission: meta.PermissionAllow}
	if err := c.CreateACLs(testCtx(t), []meta.ACL{a}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("CreateACLs of a name of 0xff bytes: %v, want ErrInvalid", err)
	}
	if s := cache.Snapshot(); len(s.ACLs) != 0 || len(s.BadACLs) != 0 {
		t.Fatalf("ACLs %v, bad %v after a refused create", s.ACLs, s.BadACLs)
	}
}

// CreateACLs takes the broker's largest request, 10000 ACLs (here with
// names of about 250 bytes, some 5 MB in one transaction), beyond the etcd
// client's default 2 MiB send limit.
func TestCreateACLsLargeBatch(t *testing.T) {
	c := connect(t, sharedEtcd(t), clusterName(t))
	var acls []meta.ACL
	for i := 0; i < 10000; i++ {
		acls = append(acls, meta.ACL{ResourceType: meta.ResourceTopic, ResourceName: strings.Repeat("x", 200) + string(rune('a'+i%26)) + strings.Repeat("y", i%50) + string(rune(0x4e00+i)),
			PatternType: meta.PatternLiteral, Principal: "User:alice", Host: "*", Operation: meta.OpRead, Permission: meta.PermissionAllow})
	}
	if err := c.CreateACLs(testCtx(t), acls); err != nil {
		t.Fatalf("10000 ACLs of 200-byte names (the broker admits them): %v (ErrTxnTooLarge: %v)", err, errors.Is(err, ErrTxnTooLarge))
	}
}
