package coord

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// AllocateProducerIDs reserves the block [first, first+size) of producer
// ids, cluster-wide, by compare-and-swap on the producer-ids key (the next
// free id, decimal; absent means 0). Concurrent allocations retry, so
// blocks never overlap.
func (c *Client) AllocateProducerIDs(ctx context.Context, size int64) (first int64, err error) {
	if size <= 0 {
		return 0, fmt.Errorf("%w: producer id block size %d", ErrInvalid, size)
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.producerIDs()
	resp, err := c.etcd.Get(ctx, key)
	if err != nil {
		return 0, c.wrapErr("allocate producer ids", err)
	}
	kvs := resp.Kvs
	for {
		next, modRev, err := parseNextProducerID(key, kvs)
		if err != nil {
			return 0, err
		}
		if next > math.MaxInt64-size {
			return 0, fmt.Errorf("coord: allocate producer ids: %w: ids exhausted at %d", ErrInvalid, next)
		}
		tresp, err := c.etcd.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(clientv3.OpPut(key, strconv.FormatInt(next+size, 10))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return 0, c.wrapErr("allocate producer ids", err)
		}
		if tresp.Succeeded {
			c.noteRevision(tresp.Header.Revision)
			return next, nil
		}
		// Another broker took the block: retry from the value it wrote.
		kvs = tresp.Responses[0].GetResponseRange().Kvs
	}
}

// parseNextProducerID decodes the producer-ids key as read (kvs empty:
// absent).
func parseNextProducerID(key string, kvs []*mvccpb.KeyValue) (next, modRevision int64, err error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	next, err = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || next < 0 {
		return 0, 0, fmt.Errorf("coord: allocate producer ids: corrupt %s value %q", key, kvs[0].Value)
	}
	return next, kvs[0].ModRevision, nil
}
