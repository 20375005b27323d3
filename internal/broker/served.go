package broker

// Admin changes answered once every broker serves them.
//
// CreateTopics, DeleteTopics and CreatePartitions answer only when every
// live broker's Metadata shows the change (or the request's timeout passes:
// REQUEST_TIMED_OUT, as Kafka answers when its wait expires; the change
// itself is stored and stays). A client may then ask any broker and find the
// topic complete, or gone; it never sees a broker that still describes the
// deleted topic or does not know the new one. Each broker answers from the
// snapshot its replicas match (Broker.view), so a leader that describes a
// new partition already leads it.
//
// The broker that made the change asks the others with the Metadata request
// a client would send, over a short-lived client per broker. It stops
// waiting for a broker that leaves the cluster, and for one it cannot ask
// twice in a row (connection refused, no answer within
// servedAskTimeout): no client reaches that broker either, so none can read
// its old view (a killed broker stays registered until its session
// expires). It stops waiting for a topic that its own view shows deleted
// or re-created meanwhile: a later change overtook this one. This goes
// beyond Kafka, whose KRaft controller answers once the change is
// committed, before any broker applies it.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
)

// servedTopic is how a changed topic must appear in a broker's Metadata.
type servedTopic struct {
	name string
	// id is the topic's id: the created or extended topic's, or the
	// deleted one's (zero if unknown).
	id meta.TopicID
	// partitions is the partition count a created or extended topic has
	// at least.
	partitions int
	deleted    bool
}

// servedBy reports whether a broker's description of the topic shows the
// change.
func (st servedTopic) servedBy(rt *kmsg.MetadataResponseTopic) bool {
	if st.deleted {
		return rt.ErrorCode == kerr.UnknownTopicOrPartition.Code ||
			(rt.ErrorCode == 0 && !st.id.IsZero() && meta.TopicID(rt.TopicID) != st.id)
	}
	return rt.ErrorCode == 0 && meta.TopicID(rt.TopicID) == st.id && len(rt.Partitions) >= st.partitions
}

// servedPollMax bounds the pause between two rounds of asking the brokers
// that do not serve a change yet; servedAskTimeout bounds one question, so
// a broker that stopped answering is dropped once it leaves the cluster.
const (
	servedPollMax    = 100 * time.Millisecond
	servedAskTimeout = 500 * time.Millisecond
	// servedAskFailures is how many questions in a row a broker may leave
	// unanswered before it is no longer waited for.
	servedAskFailures = 2
)

// askResult is one broker's answer to brokerServes.
type askResult int

const (
	askServed askResult = iota // the answer shows every change
	askStale                   // it answered, without every change
	askFailed                  // no answer
)

// waitServed returns once this broker and every other live broker serve
// the topics' changes, or ctx is done.
func (b *Broker) waitServed(ctx context.Context, topics []servedTopic) error {
	if len(topics) == 0 {
		return nil
	}
	if err := b.waitApplied(ctx); err != nil {
		return err
	}
	clients := map[string]*kgo.Client{}
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	topics = slices.Clone(topics)
	served := map[int32]bool{b.cfg.NodeID: true}
	failures := map[int32]int{}
	pause := 5 * time.Millisecond
	for {
		s := b.view()
		topics = slices.DeleteFunc(topics, func(st servedTopic) bool { return overtaken(s, st) })
		if len(topics) == 0 {
			return nil
		}
		var pending []int32
		var addrs []string
		for _, id := range liveBrokers(s) {
			if addr, ok := brokerAddr(s, id); ok && !served[id] {
				pending, addrs = append(pending, id), append(addrs, addr)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		results := make([]askResult, len(pending))
		var wg sync.WaitGroup
		for i, addr := range addrs {
			cl := clients[addr]
			if cl == nil {
				var err error
				cl, err = kgo.NewClient(b.interBrokerClient(kgo.SeedBrokers(addr),
					kgo.ClientID("samsa-admin-"+strconv.Itoa(int(b.cfg.NodeID))),
					kgo.DialTimeout(servedAskTimeout))...)
				if err != nil {
					return fmt.Errorf("broker: ask broker %d: %w", pending[i], err)
				}
				clients[addr] = cl
			}
			wg.Go(func() { results[i] = brokerServes(ctx, cl, topics) })
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: the change is stored, but not every broker serves it yet", err)
		}
		var still []int32
		for i, id := range pending {
			switch results[i] {
			case askServed:
				served[id] = true
			case askFailed:
				if failures[id]++; failures[id] >= servedAskFailures {
					b.logger.Warn("not waiting for a broker that does not answer to serve an admin change", "broker", id)
					served[id] = true
					continue
				}
				still = append(still, id)
			default:
				failures[id] = 0
				still = append(still, id)
			}
		}
		if len(still) == 0 {
			continue // brokers may have joined meanwhile
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: the change is stored, but broker(s) %v do not serve it yet", ctx.Err(), still)
		case <-t.C:
		}
		pause = min(2*pause, servedPollMax)
	}
}

// overtaken reports whether a later change overtook st in view s: a
// created or extended topic that is gone or has another id.
func overtaken(s *coord.Snapshot, st servedTopic) bool {
	if st.deleted {
		return false
	}
	vt, ok := s.Topics[st.name]
	return !ok || vt.Topic.ID != st.id
}

// brokerServes asks one broker for the topics' metadata and reports whether
// its answer shows every change.
func brokerServes(ctx context.Context, cl *kgo.Client, topics []servedTopic) askResult {
	ctx, cancel := context.WithTimeout(ctx, servedAskTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, st := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		name := st.name
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return askFailed
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return askFailed
	}
	md := resp.(*kmsg.MetadataResponse)
	for _, st := range topics {
		i := slices.IndexFunc(md.Topics, func(rt kmsg.MetadataResponseTopic) bool {
			return rt.Topic != nil && *rt.Topic == st.name
		})
		if i < 0 || !st.servedBy(&md.Topics[i]) {
			return askStale
		}
	}
	return askServed
}
