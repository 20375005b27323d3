package broker

// AlterConfigs (key 33), versions 0–2 (flexible from v2).
//
// The legacy, non-incremental form of IncrementalAlterConfigs (key 44):
// the configs a resource lists replace its dynamic configs, so a topic
// config the request leaves out goes back to its default (the broker's
// default from server.properties, else Kafka's). Values are validated as
// for key 44 before anything is written; validate_only checks and writes
// nothing. First, as Kafka's ConfigAdminManager.preprocess does: a
// resource named twice fails both times, a config named twice or a null
// value fails its resource, all INVALID_REQUEST. A broker resource must
// name this broker, or be "" (the cluster-wide default), and then fails as
// with key 44: broker configs are static in samsa (server.properties).
// BROKER_LOGGER, which the legacy API never supported, and the other
// types are INVALID_REQUEST. With an authorizer, after the duplicate
// check: a topic needs ALTER_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), a
// broker ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleAlterConfigs(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	ctx, cancel := requestContext(ctx, 30000)
	defer cancel()

	type resourceID struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	az := b.authz(req)
	seen := make(map[resourceID]int, len(r.Resources))
	for _, res := range r.Resources {
		seen[resourceID{res.ResourceType, res.ResourceName}]++
	}
	for _, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var err error
		code := configsAuthorization(az, kmsg.ACLOperationAlterConfigs, res.ResourceType, res.ResourceName)
		switch {
		case seen[resourceID{res.ResourceType, res.ResourceName}] > 1:
			err = fmt.Errorf("%w: each resource must appear at most once", errInvalidRequest)
		case code != 0:
			rr.ErrorCode = code
		default:
			err = b.alterConfigsResource(ctx, res, r.ValidateOnly)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorAnswer(err)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return reply(resp)
}

// alterConfigsResource replaces one resource's dynamic configs.
func (b *Broker) alterConfigsResource(ctx context.Context, res kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	configs := make(map[string]string, len(res.Configs))
	var nulls []string
	for _, c := range res.Configs {
		if _, dup := configs[c.Name]; dup {
			return fmt.Errorf("%w: config %q is listed twice", errInvalidRequest, c.Name)
		}
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			configs[c.Name] = ""
			continue
		}
		configs[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return fmt.Errorf("%w: null value not supported for: %s", errInvalidRequest, strings.Join(nulls, ", "))
	}

	switch res.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		for name, value := range configs {
			if _, ok := topicConfigDefs[name]; !ok {
				return fmt.Errorf("%w: unknown topic config %q", errInvalidConfig, name)
			}
			if err := validateTopicConfig(name, value); err != nil {
				return fmt.Errorf("%w: %v", errInvalidConfig, err)
			}
		}
		return b.updateTopicConfigs(ctx, res.ResourceName, validateOnly, func(map[string]string) (map[string]string, error) {
			return configs, nil
		})
	case kmsg.ConfigResourceTypeBroker:
		if res.ResourceName != "" {
			id, err := strconv.ParseInt(res.ResourceName, 10, 32)
			if err != nil {
				return fmt.Errorf("%w: node id must be an integer, but it is %q", errInvalidRequest, res.ResourceName)
			}
			if int32(id) != b.cfg.NodeID {
				return fmt.Errorf("%w: unexpected broker id, expected %d, but received %s", errInvalidRequest, b.cfg.NodeID, res.ResourceName)
			}
		}
		return fmt.Errorf("%w: broker configs are static in samsa (server.properties)", errInvalidRequest)
	default:
		return fmt.Errorf("%w: resource type %d", errInvalidRequest, res.ResourceType)
	}
}
