package broker

// DeleteAcls (key 31), versions 0–3 (flexible from 2): deletes the ACLs
// each filter selects (auth.ACLFilter; v0 filters are LITERAL) and lists
// them in the filter's result. A filter with an unknown enum value gets
// INVALID_REQUEST; all get CLUSTER_AUTHORIZATION_FAILED without ALTER on
// the cluster and SECURITY_DISABLED without an authorizer. An ACL created
// while the request runs (on another broker) is deleted only if this
// broker's cache already holds it. The deletions are made together or
// not at all (one etcd transaction; at most maxACLsPerRequest ACLs, else
// INVALID_REQUEST). The answer comes once this broker's cache reflects
// them.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/auth"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDeleteACLs(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(r.Filters))
	if code, msg := b.aclAlterRefusal(req, "DeleteAcls"); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, &msg
		}
		return reply(resp)
	}
	acls := b.cache.Snapshot().ACLs
	var keys []string
	deleting := map[string]bool{}
	var valid []int
	for i, rf := range r.Filters {
		f := aclFilter(r.Version, rf.ResourceType, rf.ResourceName, rf.ResourcePatternType, rf.Principal, rf.Host, rf.Operation, rf.PermissionType)
		if err := auth.ValidateACLFilter(f); err != nil {
			msg := err.Error()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			continue
		}
		valid = append(valid, i)
		var matched []meta.ACL
		for k, a := range acls {
			if f.Matches(a) {
				matched = append(matched, a)
				if !deleting[k] {
					deleting[k] = true
					keys = append(keys, k)
				}
			}
		}
		sortACLs(matched)
		for _, a := range matched {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	if len(keys) == 0 {
		return reply(resp)
	}
	if len(keys) > maxACLsPerRequest {
		msg := fmt.Sprintf("the filters match %d ACLs, more than the %d one request may delete; narrow them", len(keys), maxACLsPerRequest)
		for _, i := range valid {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			resp.Results[i].MatchingACLs = nil
		}
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		err := b.client.DeleteACLs(ctx, keys)
		if err == nil {
			err = b.cache.WaitRevision(ctx, b.client.LastRevision())
		}
		if err != nil {
			code, msg := errorAnswer(err)
			for _, i := range valid {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
				resp.Results[i].MatchingACLs = nil
			}
			return resp
		}
		for _, k := range keys {
			b.logger.Info("ACL deleted", "acl", aclString(acls[k]), "by", principalOf(req))
		}
		return resp
	}}
}
