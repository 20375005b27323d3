package broker

// AlterClientQuotas (key 49), versions 0-1 (v1 flexible), as Kafka's
// ClientQuotaControlManager: each entry's entity (user, client-id, both,
// or ip; a null name is the type's default, an empty one refused) and
// operations (set a key to a positive value, whole for the byte and
// connection rates; or remove it) are validated, and INVALID_REQUEST
// answers an entry with an invalid entity, key or value, a key given
// twice, or an entity given twice (every copy). The valid entries are
// stored in etcd in one transaction (coord.AlterClientQuotas) unless
// ValidateOnly; every broker applies them as its metadata cache sees them.
// It needs ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleAlterClientQuotas(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	allowed := b.authz(req).cluster(kmsg.ACLOperationAlterConfigs)
	resp.Entries = make([]kmsg.AlterClientQuotasResponseEntry, len(r.Entries))
	var alts []coord.QuotaAlteration
	var altEntries []int
	seen := map[string][]int{}
	for i, e := range r.Entries {
		re := &resp.Entries[i]
		*re = kmsg.NewAlterClientQuotasResponseEntry()
		var entity []meta.QuotaComponent
		for _, c := range e.Entity {
			ee := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = c.Type, c.Name
			re.Entity = append(re.Entity, ee)
			entity = append(entity, meta.QuotaComponent{Type: c.Type, Name: c.Name})
		}
		fail := func(code int16, msg string) { re.ErrorCode, re.ErrorMessage = code, &msg }
		if !allowed {
			fail(kerr.ClusterAuthorizationFailed.Code, "ALTER_CONFIGS on the cluster is required")
			continue
		}
		canon, err := meta.Canonical(entity)
		if err != nil {
			fail(kerr.InvalidRequest.Code, err.Error())
			continue
		}
		alt := coord.QuotaAlteration{Entity: canon, Set: map[string]float64{}}
		keys := map[string]bool{}
		for _, op := range e.Ops {
			if keys[op.Key] {
				err = &quotaError{"duplicate quota key " + op.Key}
				break
			}
			keys[op.Key] = true
			if op.Remove {
				if err = meta.ValidateQuotaValue(canon, op.Key, 1); err != nil {
					break
				}
				alt.Remove = append(alt.Remove, op.Key)
				continue
			}
			if err = meta.ValidateQuotaValue(canon, op.Key, op.Value); err != nil {
				break
			}
			alt.Set[op.Key] = op.Value
		}
		if err != nil {
			fail(kerr.InvalidRequest.Code, err.Error())
			continue
		}
		key := meta.EntityString(canon)
		seen[key] = append(seen[key], i)
		alts = append(alts, alt)
		altEntries = append(altEntries, i)
	}
	// An entity given twice: every copy is refused, as Kafka does.
	var keep []coord.QuotaAlteration
	var keepEntries []int
	for j, alt := range alts {
		i := altEntries[j]
		if len(seen[meta.EntityString(alt.Entity)]) > 1 {
			msg := "entity given more than once in the request"
			resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			continue
		}
		keep, keepEntries = append(keep, alt), append(keepEntries, i)
	}
	if r.ValidateOnly || len(keep) == 0 {
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		if err := b.client.AlterClientQuotas(ctx, keep); err != nil {
			code := errorCode(err)
			msg := err.Error()
			for _, i := range keepEntries {
				resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = code, &msg
			}
			return resp
		}
		// Answered once this broker's metadata shows the change, so
		// that a DescribeClientQuotas sent here next sees it.
		if err := b.partitions.waitReconciled(ctx, b.client.LastRevision()); err != nil {
			msg := "stored, but this broker's metadata did not show it in time: " + err.Error()
			for _, i := range keepEntries {
				resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = kerr.RequestTimedOut.Code, &msg
			}
		}
		return resp
	}}
}

// quotaError is an invalid request's reason.
type quotaError struct{ msg string }

func (e *quotaError) Error() string { return e.msg }
