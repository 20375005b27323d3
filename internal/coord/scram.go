package coord

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// SCRAM credentials (issue 12) live under scram/<mechanism>/<user>, one
// JSON meta.ScramCredential each, read at every authentication so that a
// change or deletion applies to the next login on every broker at once.
// A user name may hold any character but '/' is escaped ("%2F", and '%'
// as "%25") so that the key stays one path segment.

func (k keyspace) scramDir() string { return k.prefix + dirScram }
func (k keyspace) scram(mechanism, user string) string {
	return k.prefix + dirScram + mechanism + "/" + escapeUser(user)
}

func escapeUser(user string) string {
	return strings.NewReplacer("%", "%25", "/", "%2F").Replace(user)
}

func unescapeUser(s string) string {
	return strings.NewReplacer("%2F", "/", "%25", "%").Replace(s)
}

// ScramCredential returns user's credential for mechanism; ok is false
// when there is none.
func (c *Client) ScramCredential(ctx context.Context, mechanism, user string) (cred meta.ScramCredential, ok bool, err error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.etcd.Get(ctx, c.keys.scram(mechanism, user))
	if err != nil {
		return cred, false, c.wrapErr("get scram credential", err)
	}
	if len(resp.Kvs) == 0 {
		return cred, false, nil
	}
	if err := meta.Decode(resp.Kvs[0].Value, &cred); err != nil {
		return cred, false, fmt.Errorf("coord: scram credential of %q: %w", user, err)
	}
	return cred, true, nil
}

// PutScramCredential stores user's credential (for cred.Mechanism),
// replacing any. With ifAbsent, an existing credential is kept and false
// returned.
func (c *Client) PutScramCredential(ctx context.Context, user string, cred meta.ScramCredential, ifAbsent bool) (bool, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	v, err := meta.Encode(cred)
	if err != nil {
		return false, fmt.Errorf("coord: put scram credential: %w", err)
	}
	key := c.keys.scram(cred.Mechanism, user)
	txn := c.etcd.Txn(ctx)
	if ifAbsent {
		txn = txn.If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
	}
	resp, err := txn.Then(clientv3.OpPut(key, string(v))).Commit()
	if err != nil {
		return false, c.wrapErr("put scram credential", err)
	}
	c.noteRevision(resp.Header.Revision)
	return resp.Succeeded, nil
}

// AlterScramCredentials makes one user's changes in one transaction:
// puts stores credentials (each for its Mechanism, replacing any),
// deletes removes the credentials of those mechanisms. If a credential
// to delete does not exist, nothing is changed and the error wraps
// ErrNotFound, naming the mechanism.
func (c *Client) AlterScramCredentials(ctx context.Context, user string, puts []meta.ScramCredential, deletes []string) error {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	var cmps []clientv3.Cmp
	var ops, gets []clientv3.Op
	for _, mechanism := range deletes {
		key := c.keys.scram(mechanism, user)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), ">", 0))
		ops = append(ops, clientv3.OpDelete(key))
		gets = append(gets, clientv3.OpGet(key, clientv3.WithCountOnly()))
	}
	for _, cred := range puts {
		v, err := meta.Encode(cred)
		if err != nil {
			return fmt.Errorf("coord: put scram credential: %w", err)
		}
		ops = append(ops, clientv3.OpPut(c.keys.scram(cred.Mechanism, user), string(v)))
	}
	resp, err := c.etcd.Txn(ctx).If(cmps...).Then(ops...).Else(gets...).Commit()
	if err != nil {
		return c.wrapErr("alter scram credentials", err)
	}
	c.noteRevision(resp.Header.Revision)
	if !resp.Succeeded {
		for i, r := range resp.Responses {
			if r.GetResponseRange().Count == 0 {
				return fmt.Errorf("%w: %s credential of %q", ErrNotFound, deletes[i], user)
			}
		}
		return fmt.Errorf("%w: a credential of %q to delete", ErrNotFound, user)
	}
	return nil
}

// ScramUserInfo is what may be told of a user's SCRAM credentials: the
// mechanisms and iterations, never salts or keys.
type ScramUserInfo struct {
	User       string
	Mechanisms []string
	Iterations []int
}

// ScramUsers lists the users with SCRAM credentials, sorted by name.
func (c *Client) ScramUsers(ctx context.Context) ([]ScramUserInfo, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.etcd.Get(ctx, c.keys.scramDir(), clientv3.WithPrefix())
	if err != nil {
		return nil, c.wrapErr("list scram credentials", err)
	}
	byUser := map[string]*ScramUserInfo{}
	for _, kv := range resp.Kvs {
		rel := strings.TrimPrefix(string(kv.Key), c.keys.scramDir())
		mechanism, escaped, ok := strings.Cut(rel, "/")
		if !ok {
			continue
		}
		var cred meta.ScramCredential
		if meta.Decode(kv.Value, &cred) != nil {
			continue
		}
		user := unescapeUser(escaped)
		u := byUser[user]
		if u == nil {
			u = &ScramUserInfo{User: user}
			byUser[user] = u
		}
		u.Mechanisms = append(u.Mechanisms, mechanism)
		u.Iterations = append(u.Iterations, cred.Iterations)
	}
	out := make([]ScramUserInfo, 0, len(byUser))
	for _, u := range byUser {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out, nil
}

// ScramFakeKey returns the cluster's secret for unknown users' fake SCRAM
// credentials (auth.NewScramSessionKeyed), creating it on first use with a
// create-if-absent transaction so that every broker gets the same one. It
// is random and never leaves the brokers.
func (c *Client) ScramFakeKey(ctx context.Context) ([]byte, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.abs(keyScramFakeKey)
	fresh := make([]byte, 32)
	rand.Read(fresh)
	resp, err := c.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, base64.StdEncoding.EncodeToString(fresh))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return nil, c.wrapErr("scram fake key", err)
	}
	c.noteRevision(resp.Header.Revision)
	if resp.Succeeded {
		return fresh, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, fmt.Errorf("coord: scram fake key: deleted while read")
	}
	b, err := base64.StdEncoding.DecodeString(string(kvs[0].Value))
	if err != nil || len(b) < 16 {
		return nil, fmt.Errorf("coord: scram fake key: malformed")
	}
	return b, nil
}
