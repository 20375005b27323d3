package broker

// DescribeClientQuotas (key 48), versions 0-1 (v1 flexible), as Kafka's
// ClientQuotasImage.describe: the filter's components name an entity type
// each (user, client-id, ip; one per type, ip alone) matched exactly, as
// the default (no match string), or as any entity having the type; with
// Strict the entity must have no other component. Errors (INVALID_REQUEST,
// UNSUPPORTED_VERSION for an unknown type) are top-level, with a message.
// It needs DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).
// Quotas are read from this broker's metadata cache (docs/quotas.md).

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeClientQuotas(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code int16, msg string) protocol.Response {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return reply(resp)
	}
	if !b.authz(req).cluster(kmsg.ACLOperationDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "DESCRIBE_CONFIGS on the cluster is required")
	}
	exact := map[string]*string{} // type -> name (nil: the default)
	anyOf := map[string]bool{}
	for _, c := range r.Components {
		switch {
		case c.EntityType == "":
			return fail(kerr.InvalidRequest.Code, "invalid empty entity type")
		case hasKey(exact, c.EntityType) || anyOf[c.EntityType]:
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("entity type %s cannot appear more than once in the filter", c.EntityType))
		case c.EntityType != meta.QuotaUser && c.EntityType != meta.QuotaClientID && c.EntityType != meta.QuotaIP:
			return fail(kerr.UnsupportedVersion.Code, "unsupported entity type "+c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return fail(kerr.InvalidRequest.Code, "MATCH_TYPE_EXACT with a null match string")
			}
			exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return fail(kerr.InvalidRequest.Code, fmt.Sprintf("match type %d with a match string", c.MatchType))
			}
			if c.MatchType == kmsg.QuotasMatchTypeDefault {
				exact[c.EntityType] = nil
			} else {
				anyOf[c.EntityType] = true
			}
		default:
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("unknown match type %d", c.MatchType))
		}
	}
	ipFilter := hasKey(exact, meta.QuotaIP) || anyOf[meta.QuotaIP]
	otherFilter := hasKey(exact, meta.QuotaUser) || anyOf[meta.QuotaUser] || hasKey(exact, meta.QuotaClientID) || anyOf[meta.QuotaClientID]
	if ipFilter && otherFilter {
		return fail(kerr.InvalidRequest.Code, "an ip filter component cannot be combined with user or client-id ones")
	}
	s := b.view()
	quotas := slices.Collect(maps.Values(s.Quotas))
	slices.SortFunc(quotas, func(x, y meta.ClientQuota) int {
		return strings.Compare(meta.EntityString(x.Entity), meta.EntityString(y.Entity))
	})
	for _, q := range quotas {
		if !quotaMatches(q.Entity, exact, anyOf, r.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range q.Entity {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = c.Type, c.Name
			e.Entity = append(e.Entity, ee)
		}
		for _, k := range slices.Sorted(maps.Keys(q.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return reply(resp)
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

// quotaMatches is Kafka's ClientQuotasImage.matches.
func quotaMatches(entity []meta.QuotaComponent, exact map[string]*string, anyOf map[string]bool, strict bool) bool {
	if strict && len(entity) != len(exact)+len(anyOf) {
		return false
	}
	find := func(typ string) (meta.QuotaComponent, bool) {
		for _, c := range entity {
			if c.Type == typ {
				return c, true
			}
		}
		return meta.QuotaComponent{}, false
	}
	for typ, name := range exact {
		c, ok := find(typ)
		if !ok || (c.Name == nil) != (name == nil) || c.Name != nil && *c.Name != *name {
			return false
		}
	}
	for typ := range anyOf {
		if _, ok := find(typ); !ok {
			return false
		}
	}
	return true
}
