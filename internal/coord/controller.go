package coord

import (
	"context"
	"encoding/json"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The controller election is a single key, controller, holding the broker
// id of the controller and attached to that broker's session lease (as
// Kafka's ZooKeeper-era /controller node). Whoever creates it is controller
// until its lease ends or it resigns; the key's create revision is the
// controller epoch, and every controller write is conditioned on it
// (ControllerIs), so a deposed controller cannot write.

// controllerValue is the controller key's JSON value.
type controllerValue struct {
	BrokerID int32 `json:"broker_id"`
}

// Campaign blocks until this session's broker is controller and returns the
// controller epoch. It returns early when ctx ends or the session is lost.
// If the broker already holds the key (on this lease), it returns that
// epoch at once.
func (s *Session) Campaign(ctx context.Context) (int64, error) {
	c := s.client
	key := c.keys.abs(keyController)
	val, err := json.Marshal(controllerValue{BrokerID: s.id})
	if err != nil {
		return 0, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for {
		// Only while this incarnation is registered: a fenced session's
		// lease may outlive its registration for a moment.
		resp, err := c.etcd.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
				clientv3.Compare(clientv3.CreateRevision(c.keys.abs(relBroker(s.id))), "=", s.createRevision)).
			Then(clientv3.OpPut(key, string(val), clientv3.WithLease(s.lease))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			if s.Err() != nil {
				return 0, s.Err()
			}
			return 0, c.wrapErr("campaign for controller", err)
		}
		if resp.Succeeded {
			c.noteRevision(resp.Header.Revision)
			return resp.Header.Revision, nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 1 && clientv3.LeaseID(kvs[0].Lease) == s.lease {
			return kvs[0].CreateRevision, nil
		}
		if len(kvs) == 0 {
			// No controller, so the registration failed the condition.
			return 0, fmt.Errorf("coord: campaign for controller: broker %d: %w", s.id, ErrSessionLost)
		}
		// Someone else is controller: wait for the key to go.
		if err := c.waitDeleted(ctx, key, resp.Header.Revision); err != nil {
			if s.Err() != nil {
				return 0, s.Err()
			}
			return 0, err
		}
	}
}

// waitDeleted returns once key is deleted after revision rev.
func (c *Client) waitDeleted(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wresp := range c.etcd.Watch(wctx, key, clientv3.WithRev(rev+1)) {
		if err := wresp.Err(); err != nil {
			return c.wrapErr("watch controller", err)
		}
		for _, ev := range wresp.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("coord: watch controller: %w", ErrUnavailable)
}

// Resign gives up the controller role held with epoch, if still held
// (controlled shutdown hands it over before the lease ends).
func (s *Session) Resign(ctx context.Context, epoch int64) error {
	c := s.client
	key := c.keys.abs(keyController)
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	_, err := c.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", epoch)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return c.wrapErr("resign controller", err)
	}
	return nil
}

// ControllerIs holds while the controller with the given epoch is still
// controller: the fencing condition of every controller write.
func ControllerIs(epoch int64) Condition {
	return Condition{
		rel:   keyController,
		field: condCreateRevision,
		value: epoch,
		what:  fmt.Sprintf("controller epoch %d", epoch),
	}
}
