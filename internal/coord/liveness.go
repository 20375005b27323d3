package coord

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// heartbeatValue is the value of heartbeats/<id>: which incarnation beats
// (the create revision of its registration) and its session timeout, after
// which, without a heartbeat, the others may fence it.
type heartbeatValue struct {
	Incarnation      int64 `json:"incarnation"`
	SessionTimeoutMs int64 `json:"session_timeout_ms"`
}

// peer is another broker's heartbeat as WatchPeers follows it.
type peer struct {
	heartbeatValue
	// rev is its last heartbeat's mod revision; seen is when that was
	// applied here.
	rev  int64
	seen time.Time
	// own counts this session's heartbeats applied here since.
	own int
	// fencing: a fence of this incarnation is done or under way.
	fencing bool
}

// ownBeatsBeforeFence is how many of its own heartbeats a session must see
// after a peer's last before it may fence the peer: the proof that etcd
// takes writes, and that this session's view of the heartbeats is current
// (the watch delivers them in revision order).
const ownBeatsBeforeFence = 2

// WatchPeers fences the other brokers whose heartbeats stop, until ctx is
// done or s ends. It follows heartbeats/ and, when a peer's last heartbeat
// was applied here at least that peer's session timeout ago, while at
// least ownBeatsBeforeFence of s's own heartbeats were applied since, it
// fences the peer (FenceBroker), on condition that no heartbeat of it
// landed since the one applied here.
//
// Why: a broker's lease alone expires a session timeout after the etcd
// leader last renewed it, but an etcd leader that takes over extends every
// lease by a whole TTL and an election timeout (it cannot know when they
// were last renewed); when the dead broker hosted the etcd leader, its
// session would outlive it by that much. Heartbeats are raft writes, so a
// broker whose heartbeat lands is connected to the etcd quorum.
//
// Why it is safe: the fence is a transaction conditioned on the peer's
// heartbeat key still having the revision applied here, so the peer's last
// successful renewal is the one that wrote it, sent before it landed and so
// more than its session timeout before the fence; the peer declared its
// session lost sooner (lostAfter), and has stopped acknowledging writes
// (Live) before the controller can elect another leader. A heartbeat of
// the peer that lands after the fence fails (beat is conditioned on the
// registration), so it cannot count as a renewal. However late this
// watch's view, it fences no broker whose heartbeats still land. The own
// heartbeats it waits for keep a session whose writes do not land (paused,
// cut off, etcd without a quorum) from fencing anybody at all.
func (c *Client) WatchPeers(ctx context.Context, s *Session) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for ctx.Err() == nil {
		err := c.watchPeers(ctx, s)
		if ctx.Err() != nil {
			break
		}
		c.log.Debug("coord: heartbeat watch failed; watching again", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(keepAliveRetry):
		}
	}
	return nil
}

// watchPeers is one read of heartbeats/ and a watch from there, until the
// watch fails or ctx is done. Every peer it finds counts as seen now.
func (c *Client) watchPeers(ctx context.Context, s *Session) error {
	prefix := c.keys.abs(dirHeartbeats)
	octx, ocancel := c.opCtx(ctx)
	resp, err := c.etcd.Get(octx, prefix, clientv3.WithPrefix())
	ocancel()
	if err != nil {
		return c.wrapErr("read heartbeats", err)
	}
	now := time.Now()
	peers := map[int32]*peer{}
	for _, kv := range resp.Kvs {
		if id, hb, ok := c.parseHeartbeat(kv); ok && id != s.id {
			peers[id] = &peer{heartbeatValue: hb, rev: kv.ModRevision, seen: now}
		}
	}
	// WithRequireLeader: a member cut off from the quorum ends the watch
	// rather than leaving it silent.
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	wch := c.etcd.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	for wresp := range wch {
		if err := wresp.Err(); err != nil {
			return err
		}
		now := time.Now()
		beat := false
		for _, ev := range wresp.Events {
			id, hb, ok := c.parseHeartbeat(ev.Kv)
			switch {
			case ev.Type == mvccpb.DELETE:
				if id := c.keys.parse(string(ev.Kv.Key)).broker; id != s.id {
					delete(peers, id)
				}
			case !ok:
			case id == s.id:
				if hb.Incarnation == s.createRevision {
					beat = true
					for _, p := range peers {
						p.own++
					}
				}
			default:
				peers[id] = &peer{heartbeatValue: hb, rev: ev.Kv.ModRevision, seen: now}
			}
		}
		if !beat {
			continue
		}
		for id, p := range peers {
			timeout := time.Duration(p.SessionTimeoutMs) * time.Millisecond
			if p.fencing || p.own < ownBeatsBeforeFence || now.Sub(p.seen) < timeout {
				continue
			}
			p.fencing = true
			fenced, err := c.fence(ctx, id, p.Incarnation, p.rev)
			switch {
			case err != nil:
				p.fencing = false // try again at the next heartbeat
				c.log.Warn("coord: cannot fence a broker without heartbeats", "broker", id, "err", err)
			case fenced:
				c.log.Warn("coord: fenced a broker without heartbeats: its session is revoked",
					"broker", id, "incarnation", p.Incarnation, "silent_for", now.Sub(p.seen).Round(time.Millisecond),
					"session_timeout", timeout)
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New("coord: heartbeat watch closed")
}

// parseHeartbeat decodes a heartbeats/<id> key.
func (c *Client) parseHeartbeat(kv *mvccpb.KeyValue) (int32, heartbeatValue, bool) {
	pk := c.keys.parse(string(kv.Key))
	if pk.kind != kindHeartbeat {
		return 0, heartbeatValue{}, false
	}
	var hb heartbeatValue
	if len(kv.Value) == 0 {
		return pk.broker, hb, false
	}
	if err := json.Unmarshal(kv.Value, &hb); err != nil || hb.Incarnation <= 0 || hb.SessionTimeoutMs <= 0 {
		c.log.Warn("coord: ignoring an undecodable heartbeat", "key", string(kv.Key), "err", err)
		return pk.broker, hb, false
	}
	return pk.broker, hb, true
}
