package controller

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
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
	// AutoRebalance is auto.leader.rebalance.enable: every
	// RebalanceInterval (leader.imbalance.check.interval.seconds), brokers
	// whose share of preferred partitions they do not lead exceeds
	// ImbalancePercent (leader.imbalance.per.broker.percentage) get their
	// preferred leaderships back.
	AutoRebalance     bool
	RebalanceInterval time.Duration
	ImbalancePercent  int
	// OnUncleanElection, if set, is told of every unclean leader election
	// this controller stores (metrics).
	OnUncleanElection func(topic string, partition int32)
	Logger            *slog.Logger
}

// Controller is one broker's controller candidate.
type Controller struct {
	cfg Config
	log *slog.Logger
	// epoch is the controller epoch while this candidate is the active
	// controller, 0 otherwise.
	epoch atomic.Int64
}

// New returns a candidate; Run makes it campaign.
func New(cfg Config) *Controller {
	return &Controller{cfg: cfg, log: cfg.Logger.With("component", "controller")}
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
func (c *Controller) Run(ctx context.Context) error {
	cfg, log := c.cfg, c.log
	for {
		epoch, err := cfg.Session.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if cfg.Session.Err() != nil {
				return err
			}
			// A watch or campaign write failed (etcd without a leader,
			// a leader change, a timeout) while the session lives:
			// campaign again, or no controller may be left.
			log.Warn("controller campaign failed; campaigning again", "err", err, "retry_in", retryInterval)
			select {
			case <-ctx.Done():
				return nil
			case <-cfg.Session.Done():
				return cfg.Session.Err()
			case <-time.After(retryInterval):
			}
			continue
		}
		log.Info("became controller", "epoch", epoch)
		c.epoch.Store(epoch)
		err = c.runAsController(ctx, epoch)
		c.epoch.Store(0)
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := cfg.Session.Resign(rctx, epoch); err != nil {
				log.Warn("could not resign the controller role", "err", err)
			}
			cancel()
			return nil
		}
		if cfg.Session.Err() != nil {
			return err
		}
		if !errors.Is(err, errDeposed) {
			log.Warn("stopped acting as controller; campaigning again", "epoch", epoch, "err", err)
			continue
		}
		log.Warn("deposed as controller", "epoch", epoch)
	}
}

// runAsController applies Plan to every new metadata snapshot until ctx
// ends or a fenced write fails.
func (c *Controller) runAsController(ctx context.Context, epoch int64) error {
	cfg, log := c.cfg, c.log
	// Start from a cache that has seen this controller's own election.
	if err := cfg.Cache.WaitRevision(ctx, epoch); err != nil {
		return err
	}
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	interval := cfg.RebalanceInterval
	if interval <= 0 {
		interval = 5 * time.Minute
	}
	rebalance := time.NewTicker(interval)
	defer rebalance.Stop()
	for {
		changed := cfg.Cache.Changed()
		s := cfg.Cache.Snapshot()
		if s.ControllerEpoch != epoch {
			return errDeposed
		}
		failed := false
		for _, ch := range Plan(s, epoch, cfg.Unclean) {
			err := c.write(ctx, epoch, ch)
			switch {
			case err == nil, errors.Is(err, coord.ErrConflict), errors.Is(err, coord.ErrTopicNotFound):
				// A conflict: the state moved (or the topic went) since this
				// snapshot; the next snapshot replans it.
			case errors.Is(err, errDeposed):
				return err
			default:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				log.Warn("partition state write failed; retrying", "topic", ch.State.Topic,
					"partition", ch.State.Partition, "err", err)
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
		case <-rebalance.C:
			if cfg.AutoRebalance {
				for _, tp := range imbalancedPartitions(cfg.Cache.Snapshot(), cfg.ImbalancePercent) {
					if err := c.elect(ctx, epoch, Preferred, tp); errors.Is(err, errDeposed) {
						return err
					}
				}
			}
		}
	}
}

// write stores one decision, fenced by the controller epoch.
func (c *Controller) write(ctx context.Context, epoch int64, ch Change) error {
	ch.State.ControllerEpoch = epoch
	note := meta.ISRChange{PreviousLeader: ch.Previous.Leader, PreviousISR: ch.Previous.ISR,
		By: "controller " + strconv.Itoa(int(c.cfg.Session.Broker().ID)), Reason: ch.Reason}
	_, err := c.cfg.Client.CASPartitionStateNoted(ctx, ch.State, ch.ModRevision, ch.TopicID, note, coord.ControllerIs(epoch))
	if errors.Is(err, coord.ErrConditionFailed) {
		return errDeposed
	}
	if err == nil {
		c.log.Info(ch.Reason, "topic", ch.State.Topic, "partition", ch.State.Partition,
			"leader", ch.State.Leader, "leader_epoch", ch.State.LeaderEpoch, "isr", ch.State.ISR)
		if ch.Unclean && c.cfg.OnUncleanElection != nil {
			c.cfg.OnUncleanElection(ch.State.Topic, ch.State.Partition)
		}
	}
	return err
}

func (c *Controller) elect(ctx context.Context, epoch int64, kind ElectionKind, tp TopicPartition) error {
	ch, err := PlanElection(c.cfg.Cache.Snapshot(), kind, tp.Topic, tp.Partition)
	if err != nil {
		return err
	}
	return c.write(ctx, epoch, ch)
}

// Elect runs requested elections (the ElectLeaders API) and returns each
// partition's outcome; ErrNotController if this candidate is not the
// active controller. It returns once the elections are stored and this
// broker's metadata cache shows them.
func (c *Controller) Elect(ctx context.Context, kind ElectionKind, partitions []TopicPartition) (map[TopicPartition]error, error) {
	epoch := c.epoch.Load()
	if epoch == 0 {
		return nil, ErrNotController
	}
	out := make(map[TopicPartition]error, len(partitions))
	for _, tp := range partitions {
		err := c.elect(ctx, epoch, kind, tp)
		if errors.Is(err, errDeposed) {
			err = ErrNotController
		}
		out[tp] = err
	}
	if err := c.cfg.Cache.WaitRevision(ctx, c.cfg.Client.LastRevision()); err != nil {
		return nil, err
	}
	return out, nil
}
