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

// maxACLOpsPerTxn stays under etcd's default --max-txn-ops (128).
const maxACLOpsPerTxn = 100

// CreateACLs stores acls, which must each pass meta.ValidateACL. An
// error means that some may have been stored and others not: the call
// may be repeated.
func (c *Client) CreateACLs(ctx context.Context, acls []meta.ACL) error {
	ops := make([]clientv3.Op, 0, len(acls))
	for _, a := range acls {
		if err := meta.ValidateACL(a); err != nil {
			return fmt.Errorf("%w: ACL: %v", ErrInvalid, err)
		}
		v, _ := meta.Encode(a)
		ops = append(ops, clientv3.OpPut(c.keys.abs(dirACLs+ACLKey(a)), string(v)))
	}
	return c.aclTxns(ctx, "create ACLs", ops)
}

// DeleteACLs deletes the ACLs with the given keys (ACLKey); keys of ACLs
// that no longer exist are no error.
func (c *Client) DeleteACLs(ctx context.Context, keys []string) error {
	ops := make([]clientv3.Op, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, clientv3.OpDelete(c.keys.abs(dirACLs+k)))
	}
	return c.aclTxns(ctx, "delete ACLs", ops)
}

func (c *Client) aclTxns(ctx context.Context, what string, ops []clientv3.Op) error {
	for len(ops) > 0 {
		n := min(len(ops), maxACLOpsPerTxn)
		octx, cancel := c.opCtx(ctx)
		resp, err := c.etcd.Txn(octx).Then(ops[:n]...).Commit()
		cancel()
		if err != nil {
			return c.wrapErr(what, err)
		}
		c.noteRevision(resp.Header.Revision)
		ops = ops[n:]
	}
	return nil
}
