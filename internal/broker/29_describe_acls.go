package broker

// DescribeAcls (key 29), versions 0–3 (flexible from 2): the ACLs a
// filter selects (auth.ACLFilter), grouped by resource pattern, sorted.
// v0 has no pattern type: its filter is LITERAL, as in Kafka. It needs
// DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an
// authorizer it answers SECURITY_DISABLED, and a filter with an unknown
// enum value INVALID_REQUEST.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/auth"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

const noAuthorizerMessage = "No Authorizer is configured on the broker (authorizer.class.name)"

func (b *Broker) handleDescribeACLs(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code int16, msg string) protocol.Response {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return reply(resp)
	}
	az := b.authz(req)
	if !az.enabled() {
		return fail(kerr.SecurityDisabled.Code, noAuthorizerMessage)
	}
	if !az.cluster(kmsg.ACLOperationDescribe) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "DescribeAcls needs DESCRIBE on the cluster")
	}
	f := aclFilter(r.Version, r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
	if err := auth.ValidateACLFilter(f); err != nil {
		return fail(kerr.InvalidRequest.Code, err.Error())
	}
	var matched []meta.ACL
	for _, a := range b.cache.Snapshot().ACLs {
		if f.Matches(a) {
			matched = append(matched, a)
		}
	}
	sortACLs(matched)
	for _, a := range matched {
		n := len(resp.Resources)
		typ, pattern := kmsg.ACLResourceType(a.ResourceType), kmsg.ACLResourcePatternType(a.PatternType)
		if n == 0 || resp.Resources[n-1].ResourceType != typ || resp.Resources[n-1].ResourceName != a.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != pattern {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = typ, a.ResourceName, pattern
			resp.Resources = append(resp.Resources, res)
			n++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal, a.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, e)
	}
	return reply(resp)
}

// sortACLs orders ACLs by resource pattern, then principal, host,
// operation and permission.
func sortACLs(acls []meta.ACL) {
	slices.SortFunc(acls, func(x, y meta.ACL) int {
		return cmp.Or(cmp.Compare(x.ResourceType, y.ResourceType), cmp.Compare(x.ResourceName, y.ResourceName),
			cmp.Compare(x.PatternType, y.PatternType), cmp.Compare(x.Principal, y.Principal), cmp.Compare(x.Host, y.Host),
			cmp.Compare(x.Operation, y.Operation), cmp.Compare(x.Permission, y.Permission))
	})
}
