package broker

// DescribeGroups (key 15), versions 0–5 (flexible from v5). A group the
// principal may not DESCRIBE (with an authorizer) is answered
// GROUP_AUTHORIZATION_FAILED and nothing else. Authorized operations
// (v3+, KIP-430) are reported when asked for: READ, DESCRIBE and DELETE as
// the ACLs allow them, all three without an authorizer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	az := b.authz(req)
	allowed := make([]string, 0, len(r.Groups))
	for _, g := range r.Groups {
		if az.group(kmsg.ACLOperationDescribe, g) {
			allowed = append(allowed, g)
		}
	}
	described := b.groups.Describe(allowed)
	for _, g := range r.Groups {
		if len(allowed) > 0 && allowed[0] == g && len(described) > 0 {
			d := described[0]
			allowed, described = allowed[1:], described[1:]
			if r.Version >= 3 && r.IncludeAuthorizedOperations {
				d.AuthorizedOperations = az.authorizedOps(kmsg.ACLResourceTypeGroup, g, groupOps)
			}
			resp.Groups = append(resp.Groups, d)
			continue
		}
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group, d.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, d)
	}
	return reply(resp)
}
