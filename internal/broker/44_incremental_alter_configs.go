package broker

// IncrementalAlterConfigs (key 44), versions 0–1 (flexible from v1).
//
// Topic configs only: SET and DELETE (back to the broker default) for every
// supported topic config; APPEND and SUBTRACT apply to list configs, and
// samsa has none, so they are INVALID_CONFIG. Values are validated before
// anything is written; the change is a compare-and-swap of the topic in
// etcd, and every replica picks it up from there. Broker configs are static
// (server.properties): altering them is INVALID_REQUEST. With an
// authorizer, first: a topic needs ALTER_CONFIGS on it
// (TOPIC_AUTHORIZATION_FAILED), a broker ALTER_CONFIGS on the cluster
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	az := b.authz(req)
	ctx, cancel := requestContext(ctx, 30000)
	defer cancel()
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var err error
		if code := configsAuthorization(az, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName); code != 0 {
			rr.ErrorCode = code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		switch res.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			err = b.alterTopicConfigs(ctx, res, r.ValidateOnly)
		case kmsg.ConfigResourceTypeBroker:
			err = fmt.Errorf("%w: broker configs are static in samsa (server.properties)", errInvalidRequest)
		default:
			err = fmt.Errorf("%w: resource type %d", errInvalidRequest, res.ResourceType)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorAnswer(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return reply(resp)
}

func (b *Broker) alterTopicConfigs(ctx context.Context, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	return b.updateTopicConfigs(ctx, res.ResourceName, validateOnly, func(configs map[string]string) (map[string]string, error) {
		out := maps.Clone(configs)
		if out == nil {
			out = map[string]string{}
		}
		for _, c := range res.Configs {
			if _, ok := topicConfigDefs[c.Name]; !ok {
				return nil, fmt.Errorf("%w: unknown topic config %q", errInvalidConfig, c.Name)
			}
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if c.Value == nil {
					return nil, fmt.Errorf("%w: %s: SET needs a value", errInvalidConfig, c.Name)
				}
				if err := validateTopicConfig(c.Name, *c.Value); err != nil {
					return nil, fmt.Errorf("%w: %v", errInvalidConfig, err)
				}
				out[c.Name] = *c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(out, c.Name)
			default:
				return nil, fmt.Errorf("%w: %s: operation %d applies to list configs only", errInvalidConfig, c.Name, c.Op)
			}
		}
		return out, nil
	})
}

// updateTopicConfigs sets the dynamic configs of a topic to what apply
// returns for its current ones, and waits until this broker's view has
// the change; with validateOnly it only runs apply. The change is a
// compare-and-swap of the topic in etcd, so apply may run more than once.
func (b *Broker) updateTopicConfigs(ctx context.Context, topic string, validateOnly bool, apply func(map[string]string) (map[string]string, error)) error {
	// The name first, as Kafka's ControllerConfigurationValidator.
	// validateTopicName: the empty one (the default resource) is
	// INVALID_REQUEST, another invalid one INVALID_TOPIC_EXCEPTION.
	if topic == "" {
		return fmt.Errorf("%w: default topic resources are not allowed", errInvalidRequest)
	}
	if err := validTopicName(topic); err != nil {
		return fmt.Errorf("%w: %v", errInvalidTopic, err)
	}
	update := func(t *meta.Topic) ([]meta.PartitionState, error) {
		configs, err := apply(t.Configs)
		if err != nil {
			return nil, err
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		if len(configs) == 0 {
			configs = nil
		}
		t.Configs = configs
		return nil, nil
	}
	_, err := b.client.UpdateTopic(ctx, topic, update)
	if errors.Is(err, errValidateOnly) {
		return nil
	}
	if err != nil {
		return err
	}
	return b.waitApplied(ctx)
}
