package controller

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// Config wires a controller candidate to the cluster metadata.
type Config struct {
	Client  *coord.Client
	Cache   *coord.Cache
	Session *coord.Session
	// Unclean reports whether a topic allows unclean leader election.
	Unclean func(meta.Topic) bool
	Logger  *slog.Logger
}

// retryInterval is how soon writes that failed for another reason than a
// conflict (etcd unreachable, say) are tried again.
const retryInterval = time.Second

// errDeposed reports that a fenced write failed: another controller took
// over.
var errDeposed = errors.New("controller: deposed")

// Run campaigns for the controller role and, while it holds it, keeps every
// partition led by a live broker where the rules allow (see Plan). It
// returns when ctx ends (resigning the role, so another broker takes over
// at once) or the broker's session is lost.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger.With("component", "controller")
	for {
		epoch, err := cfg.Session.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		log.Info("became controller", "epoch", epoch)
		err = runAsController(ctx, cfg, epoch, log)
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := cfg.Session.Resign(rctx, epoch); err != nil {
				log.Warn("could not resign the controller role", "err", err)
			}
			cancel()
			return nil
		}
		if !errors.Is(err, errDeposed) {
			return err
		}
		log.Warn("deposed as controller", "epoch", epoch)
	}
}

// runAsController applies Plan to every new metadata snapshot until ctx
// ends or a fenced write fails.
func runAsController(ctx context.Context, cfg Config, epoch int64, log *slog.Logger) error {
	// Start from a cache that has seen this controller's own election.
	if err := cfg.Cache.WaitRevision(ctx, epoch); err != nil {
		return err
	}
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		changed := cfg.Cache.Changed()
		s := cfg.Cache.Snapshot()
		if s.ControllerEpoch != epoch {
			return errDeposed
		}
		failed := false
		for _, c := range Plan(s, epoch, cfg.Unclean) {
			_, err := cfg.Client.CASPartitionState(ctx, c.State, c.ModRevision, coord.ControllerIs(epoch))
			switch {
			case err == nil:
				log.Info(c.Reason, "topic", c.State.Topic, "partition", c.State.Partition,
					"leader", c.State.Leader, "leader_epoch", c.State.LeaderEpoch, "isr", c.State.ISR)
			case errors.Is(err, coord.ErrConflict), errors.Is(err, coord.ErrTopicNotFound):
				// The state moved (or the topic went) since this snapshot; the
				// next snapshot replans it.
			case errors.Is(err, coord.ErrConditionFailed):
				return errDeposed
			default:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				log.Warn("partition state write failed; retrying", "topic", c.State.Topic,
					"partition", c.State.Partition, "err", err)
				failed = true
			}
		}
		if failed {
			retry.Reset(retryInterval)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-retry.C:
		}
	}
}
