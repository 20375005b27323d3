package coord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/meta"
)

// Client quotas (issue 14) live under quotas/<key>, one JSON
// meta.ClientQuota each, the key the SHA-256 of the entity's canonical
// text (meta.EntityString), so that any name, '/' included, makes one
// key. Every broker's Cache holds them all (Snapshot.Quotas): enforcement
// reads no etcd.

// QuotaKey is the key under quotas/ of a canonical entity.
func QuotaKey(entity []meta.QuotaComponent) string {
	sum := sha256.Sum256([]byte(meta.EntityString(entity)))
	return hex.EncodeToString(sum[:])
}

// QuotaAlteration changes one entity's quotas: Set sets values, Remove
// removes keys (a key absent already is no error). An entity left without
// values is deleted.
type QuotaAlteration struct {
	Entity []meta.QuotaComponent
	Set    map[string]float64
	Remove []string
}

// quotaRetries bounds how often AlterClientQuotas reads again after
// another writer changed one of its entities meanwhile.
const quotaRetries = 5

// Chunks of AlterClientQuotas: an etcd transaction takes at most 128
// operations by default (--max-txn-ops) and 1.5 MiB.
const (
	quotaChunkEntities = 64
	quotaChunkBytes    = 512 << 10
)

// AlterClientQuotas applies alterations, whose entities must be canonical
// (meta.Canonical) and values valid (meta.ValidateQuotaValue): each
// entity's record is read and written back compare-and-swapped on its
// revision, a concurrent change making it read again. The entities go in
// transactions of at most quotaChunkEntities entities and about
// quotaChunkBytes: each chunk all or nothing, the chunks in order.
func (c *Client) AlterClientQuotas(ctx context.Context, alts []QuotaAlteration) error {
	byEntity := map[string][]QuotaAlteration{}
	var order []string
	for _, a := range alts {
		k := meta.EntityString(a.Entity)
		if _, ok := byEntity[k]; !ok {
			order = append(order, k)
		}
		byEntity[k] = append(byEntity[k], a)
	}
	var chunk []QuotaAlteration
	entities, size := 0, 0
	for _, k := range order {
		if entities > 0 && (entities >= quotaChunkEntities || size+2*len(k) > quotaChunkBytes) {
			if err := c.alterQuotaChunk(ctx, chunk); err != nil {
				return err
			}
			chunk, entities, size = nil, 0, 0
		}
		chunk = append(chunk, byEntity[k]...)
		entities++
		size += 2*len(k) + 64*len(byEntity[k])
	}
	if len(chunk) == 0 {
		return nil
	}
	return c.alterQuotaChunk(ctx, chunk)
}

// alterQuotaChunk applies alts in one transaction.
func (c *Client) alterQuotaChunk(ctx context.Context, alts []QuotaAlteration) error {
	for attempt := 0; ; attempt++ {
		var (
			cmps []clientv3.Cmp
			ops  []clientv3.Op
		)
		next := map[string]*meta.ClientQuota{}
		var order []string
		for _, a := range alts {
			key := c.keys.abs(dirQuotas + QuotaKey(a.Entity))
			q, ok := next[key]
			if !ok {
				octx, cancel := c.opCtx(ctx)
				resp, err := c.etcd.Get(octx, key)
				cancel()
				if err != nil {
					return c.wrapErr("read client quota", err)
				}
				q = &meta.ClientQuota{Entity: a.Entity, Values: map[string]float64{}}
				var mod int64
				if len(resp.Kvs) == 1 {
					mod = resp.Kvs[0].ModRevision
					var cur meta.ClientQuota
					if err := meta.Decode(resp.Kvs[0].Value, &cur); err == nil && cur.Values != nil {
						q.Values = maps.Clone(cur.Values)
					}
				}
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", mod))
				next[key] = q
				order = append(order, key)
			}
			for _, k := range a.Remove {
				delete(q.Values, k)
			}
			maps.Copy(q.Values, a.Set)
		}
		for _, key := range order {
			q := next[key]
			if len(q.Values) == 0 {
				ops = append(ops, clientv3.OpDelete(key))
				continue
			}
			v, err := meta.Encode(q)
			if err != nil {
				return fmt.Errorf("coord: encode client quota: %w", err)
			}
			ops = append(ops, clientv3.OpPut(key, string(v)))
		}
		if len(ops) == 0 {
			return nil
		}
		octx, cancel := c.opCtx(ctx)
		resp, err := c.etcd.Txn(octx).If(cmps...).Then(ops...).Commit()
		cancel()
		if err != nil {
			return c.wrapErr("alter client quotas", err)
		}
		if resp.Succeeded {
			c.noteRevision(resp.Header.Revision)
			return nil
		}
		if attempt+1 >= quotaRetries {
			return fmt.Errorf("%w: client quotas changed concurrently %d times", ErrConflict, quotaRetries)
		}
	}
}
