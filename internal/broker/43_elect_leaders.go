package broker

// ElectLeaders (key 43), versions 0–2 (flexible from v2).
//
// Answered by the active controller. Another broker forwards the request to
// the controller its view names and relays the answer, as Kafka 4 brokers
// forward to their controller (NOT_CONTROLLER only if that fails, or for a
// request that was forwarded already). v0 elects preferred leaders; v1+
// carries the type: PREFERRED (0) gives each partition its first assigned
// replica if that one is alive and in the ISR (PREFERRED_LEADER_NOT_AVAILABLE
// otherwise, ELECTION_NOT_NEEDED if it leads already); UNCLEAN (1) elects a
// leader for a partition without one, from the ISR if possible, else any
// live replica (ELIGIBLE_LEADERS_NOT_AVAILABLE if none). A null topic list
// means every partition. Elections are fenced writes of the controller, as
// its own are. With an authorizer, the request needs ALTER on the
// cluster (else CLUSTER_AUTHORIZATION_FAILED, top level and on every
// partition named); a forwarded request is checked again against the
// forwarding broker's principal.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/controller"
	"github.com/samsa-io/samsa/internal/protocol"
)

// forwardClientID is the client id of requests a broker forwards to the
// controller; the controller never forwards them again.
const forwardClientID = "samsa-forward"

func (b *Broker) handleElectLeaders(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	ctx, cancel := requestContext(ctx, r.TimeoutMillis)
	forwarded := req.ClientID != nil && *req.ClientID == forwardClientID
	if !b.authz(req).cluster(kmsg.ACLOperationAlter) {
		cancel()
		resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, t := range r.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return reply(resp)
	}
	return protocol.Response{Mute: true, Later: func() kmsg.Response {
		defer cancel()
		return b.electLeaders(ctx, r, forwarded)
	}}
}

func (b *Broker) electLeaders(ctx context.Context, r *kmsg.ElectLeadersRequest, forwarded bool) *kmsg.ElectLeadersResponse {
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	kind := controller.Preferred
	if r.Version >= 1 {
		kind = controller.ElectionKind(r.ElectionType)
	}
	var targets []controller.TopicPartition
	if r.Topics == nil {
		s := b.cache.Snapshot()
		for name, vt := range s.Topics {
			for p := range vt.Topic.Partitions {
				targets = append(targets, controller.TopicPartition{Topic: name, Partition: int32(p)})
			}
		}
		slices.SortFunc(targets, func(a, b controller.TopicPartition) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return int(a.Partition - b.Partition)
		})
	} else {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				targets = append(targets, controller.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	var results map[controller.TopicPartition]error
	var topErr error
	if kind != controller.Preferred && kind != controller.Unclean {
		topErr = errInvalidRequest
	} else {
		results, topErr = b.controller.Elect(ctx, kind, targets)
	}
	if errors.Is(topErr, controller.ErrNotController) && !forwarded {
		fwd, err := b.forwardToController(ctx, r)
		if err == nil {
			return fwd
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The controller may have run the election: Kafka's answer
			// to a forward that does not come back in time.
			topErr = fmt.Errorf("forwarding to the controller: %w", ctx.Err())
		} else {
			topErr = fmt.Errorf("%w (forwarding to the controller: %v)", topErr, err)
		}
	}
	if topErr != nil && r.Version >= 1 {
		resp.ErrorCode = errorCode(topErr)
	}
	byTopic := map[string]int{}
	for _, tp := range targets {
		i, ok := byTopic[tp.Topic]
		if !ok {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[tp.Topic] = i
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = tp.Partition
		err := topErr
		if err == nil {
			err = results[tp]
		}
		if err != nil {
			rp.ErrorCode, rp.ErrorMessage = errorAnswer(err)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}

// forwardToController sends an ElectLeaders request to the controller this
// broker's view names and returns its answer.
func (b *Broker) forwardToController(ctx context.Context, r *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	s := b.view()
	id := s.ControllerID
	if id < 0 || id == b.cfg.NodeID {
		return nil, errors.New("no other controller known")
	}
	addr, ok := brokerAddr(s, id)
	if !ok {
		return nil, fmt.Errorf("controller %d is not registered", id)
	}
	cl, err := kgo.NewClient(b.interBrokerClient(kgo.SeedBrokers(addr), kgo.ClientID(forwardClientID), kgo.DialTimeout(5*time.Second))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	fwd := *r
	resp, err := cl.SeedBrokers()[0].Request(ctx, &fwd)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.ElectLeadersResponse), nil
}
