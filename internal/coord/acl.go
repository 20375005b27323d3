package coord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// ACLs (issue 12) live under acls/<key>, one JSON meta.ACL each. The key
// is the SHA-256 of the ACL's encoding, so creating an ACL that exists
// writes the same key with the same value (Kafka's CreateAcls of an
// existing binding succeeds too) and an ACL is deleted by its key. Every
// broker's Cache holds them all (Snapshot.ACLs): authorization reads no
// etcd, and a change applies on every broker as its watch delivers it.

// ACLKey is the key of a under acls/.
func ACLKey(a meta.ACL) string {
	v, err := meta.Encode(a)
	if err != nil {
		panic(fmt.Sprintf("coord: encode ACL: %v", err)) // plain struct of strings and enums
	}
	sum := sha256.Sum256(v)
	return hex.EncodeToString(sum[:])
}

// CreateACLs stores acls, which must each pass meta.ValidateACL, in one
// transaction: all are stored or none. An ACL given twice is stored once.
// An external etcd refuses more operations in one transaction than its
// --max-txn-ops (128 by default; the embedded member takes 10240): the
// error then wraps ErrTxnTooLarge.
func (c *Client) CreateACLs(ctx context.Context, acls []meta.ACL) error {
	ops := make([]clientv3.Op, 0, len(acls))
	seen := make(map[string]bool, len(acls))
	for _, a := range acls {
		if err := meta.ValidateACL(a); err != nil {
			return fmt.Errorf("%w: ACL: %v", ErrInvalid, err)
		}
		key := ACLKey(a)
		if seen[key] {
			continue
		}
		seen[key] = true
		v, _ := meta.Encode(a)
		ops = append(ops, clientv3.OpPut(c.keys.abs(dirACLs+key), string(v)))
	}
	return c.aclTxn(ctx, "create ACLs", ops)
}

// DeleteACLs deletes the ACLs with the given keys (ACLKey) in one
// transaction; keys of ACLs that no longer exist are no error. Limits as
// CreateACLs.
func (c *Client) DeleteACLs(ctx context.Context, keys []string) error {
	ops := make([]clientv3.Op, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			ops = append(ops, clientv3.OpDelete(c.keys.abs(dirACLs+k)))
		}
	}
	return c.aclTxn(ctx, "delete ACLs", ops)
}

func (c *Client) aclTxn(ctx context.Context, what string, ops []clientv3.Op) error {
	if len(ops) == 0 {
		return nil
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.etcd.Txn(octx).Then(ops...).Commit()
	if err != nil {
		return c.wrapErr(what, err)
	}
	c.noteRevision(resp.Header.Revision)
	return nil
}
