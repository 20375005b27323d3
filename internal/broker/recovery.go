package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
)

// Invariant 10: a replica restarted after an unclean shutdown stays out of
// the ISR and of leadership until it has caught up.
//
// A broker whose data directory had no clean-shutdown marker (datadir.go)
// was killed, crashed or lost power: its logs may lack records it had
// reported to its leaders, while the partition states in etcd may still
// list it in ISRs (a restart faster than the session timeout replaces the
// registration in place, so nobody saw it die). It registers with
// meta.Broker.Recovering set, and then:
//   - the controller removes it from every ISR that keeps an eligible
//     member and moves away any leadership (controller.Plan);
//   - it acts as leader for nothing, even where the stored state still
//     names it (applyState), but fetches as a follower like any replica;
//   - leaders do not propose it for their ISRs (mayJoinISR), and store no
//     expansion with it (isrUpdater.store);
//   - it clears the flag (runRecovery) once no partition names it leader
//     and no ISR it is in has another member that could hold more than it
//     (recoveryBlockers). From then on it is an ordinary replica: it rejoins
//     ISRs through the leaders' expansion once caught up to their high
//     watermark and epoch start, and is elected where it is the last ISR
//     member, always in a new leader epoch.

// recoveringIn reports whether this broker still recovers from an unclean
// shutdown as of snapshot s: it started uncleanly and neither has it
// cleared its registration's flag, nor does s show it cleared.
func (b *Broker) recoveringIn(s *coord.Snapshot) bool {
	if !b.recovering.Load() {
		return false
	}
	if b.session != nil {
		if vb, ok := s.Brokers[b.cfg.NodeID]; ok && vb.CreateRevision == b.session.CreateRevision() {
			return vb.Recovering
		}
	}
	return true // not registered yet (or s predates the registration)
}

// recoveryBlockers lists the partitions (as "topic/partition") that keep
// broker id recovering: those whose stored state names it leader (the
// controller has yet to move the leadership, so that it leads again only
// in a new epoch), and those whose ISR holds it together with a broker
// that is not itself recovering, registered or not (a member that could
// have more than it; the controller removes it from those ISRs, or the
// member returns). An ISR of recovering brokers alone does not block:
// none is better than the others, and waiting for each other would
// deadlock. Only the partitions of known topics count, as in
// controller.Plan.
func recoveryBlockers(s *coord.Snapshot, id int32) []string {
	var out []string
	for name, vt := range s.Topics {
		for p := range vt.Topic.Partitions {
			vp, ok := s.Partition(name, int32(p))
			if !ok {
				continue
			}
			blocked := vp.Leader == id
			if !blocked && slices.Contains(vp.ISR, id) {
				for _, r := range vp.ISR {
					if vb, registered := s.Brokers[r]; r != id && (!registered || !vb.Recovering) {
						blocked = true
						break
					}
				}
			}
			if blocked {
				out = append(out, fmt.Sprintf("%s/%d", name, p))
			}
		}
	}
	slices.Sort(out)
	return out
}

// recoveryRetryInterval is how soon a failed attempt to clear the flag is
// repeated.
const recoveryRetryInterval = time.Second

// runRecovery clears the registration's Recovering flag once
// recoveryBlockers finds nothing, then returns; it also returns when ctx
// ends or the session is lost. It judges only snapshots that include this
// incarnation's registration: ISR memberships cannot grow for a recovering
// broker after it registered (leaders do not add it; the controller only
// shrinks ISRs), so such a snapshot is a safe basis for the decision.
func (b *Broker) runRecovery(ctx context.Context) {
	self := b.cfg.NodeID
	retry := time.NewTimer(recoveryRetryInterval)
	retry.Stop()
	defer retry.Stop()
	var lastBlockers string
	for {
		changed := b.cache.Changed()
		s := b.cache.Snapshot()
		if vb, ok := s.Brokers[self]; ok && vb.CreateRevision == b.session.CreateRevision() {
			if !vb.Recovering {
				b.recovering.Store(false)
				return
			}
			blockers := recoveryBlockers(s, self)
			if len(blockers) == 0 {
				err := b.session.SetRecovering(ctx, false)
				switch {
				case err == nil:
					b.recovering.Store(false)
					b.logger.Info("recovery after the unclean shutdown done: no ISR or leadership depends on this broker any more; it rejoins ISRs once caught up")
					return
				case errors.Is(err, coord.ErrSessionLost) || ctx.Err() != nil:
					return
				default:
					b.logger.Warn("cannot clear the recovering flag; retrying", "err", err)
					retry.Reset(recoveryRetryInterval)
				}
			} else if summary := fmt.Sprint(len(blockers), blockers[:min(len(blockers), 5)]); summary != lastBlockers {
				lastBlockers = summary
				b.logger.Info("recovering after an unclean shutdown: waiting until no partition names this broker leader or in an ISR with a member that is not recovering",
					"partitions", len(blockers), "first", blockers[:min(len(blockers), 5)])
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-b.session.Done():
			return
		case <-changed:
		case <-retry.C:
		}
	}
}
