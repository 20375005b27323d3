package broker

// CreateAcls (key 30), versions 0–3 (flexible from 2): stores ACLs in
// etcd, where every broker's cache picks them up. One result per
// creation: INVALID_REQUEST with the reason for an ACL meta.ValidateACL
// refuses (v0 has no pattern type: LITERAL), CLUSTER_AUTHORIZATION_FAILED
// for all without ALTER on the cluster, SECURITY_DISABLED without an
// authorizer. Creating an ACL that exists, or one twice, succeeds; the
// request's ACLs are stored together or not at all (one etcd transaction;
// at most maxACLsPerRequest, else INVALID_REQUEST). The answer comes once
// this broker's cache has the new ACLs, so a DescribeAcls to it sees them.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleCreateACLs(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(r.Creations))
	if code, msg := b.aclAlterRefusal(req, "CreateAcls"); code != 0 {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, &msg
		}
		return reply(resp)
	}
	var valid []meta.ACL
	var validAt []int
	for i, c := range r.Creations {
		a := meta.ACL{ResourceType: meta.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: meta.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: meta.Operation(c.Operation), Permission: meta.Permission(c.PermissionType)}
		if r.Version == 0 {
			a.PatternType = meta.PatternLiteral
		}
		if err := meta.ValidateACL(a); err != nil {
			msg := "invalid ACL: " + err.Error()
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			continue
		}
		valid, validAt = append(valid, a), append(validAt, i)
	}
	if len(valid) == 0 {
		return reply(resp)
	}
	if len(valid) > maxACLsPerRequest {
		msg := fmt.Sprintf("at most %d ACLs per request, as Kafka", maxACLsPerRequest)
		for _, i := range validAt {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
		}
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		err := b.client.CreateACLs(ctx, valid)
		if err == nil {
			err = b.cache.WaitRevision(ctx, b.client.LastRevision())
		}
		if err != nil {
			code, msg := errorAnswer(err)
			for _, i := range validAt {
				resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
			}
			return resp
		}
		for _, a := range valid {
			b.logger.Info("ACL created", "acl", aclString(a), "by", principalOf(req))
		}
		return resp
	}}
}

// aclString prints an ACL for logs and the CLI, as kafka-acls.sh does.
func aclString(a meta.ACL) string {
	return a.Principal + " has " + a.Permission.String() + " permission for operation " + a.Operation.String() +
		" from host " + a.Host + " on " + a.ResourceType.String() + ":" + a.PatternType.String() + ":" + a.ResourceName
}
