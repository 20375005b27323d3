package broker

// DeleteGroups (key 42), versions 0–2 (flexible from v2). Only empty
// groups can be deleted (NON_EMPTY_GROUP otherwise). The groups are gone
// as the request arrives; the answer waits for the tombstones' commit.
// With an authorizer, a group the principal may not DELETE is answered
// GROUP_AUTHORIZATION_FAILED and left alone.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDeleteGroups(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	az := b.authz(req)
	var allowed []string
	for _, g := range r.Groups {
		if az.group(kmsg.ACLOperationDelete, g) {
			allowed = append(allowed, g)
		}
	}
	wait := b.groups.StartDelete(allowed)
	return protocol.Response{Later: func() kmsg.Response {
		deleted := wait(ctx)
		for _, g := range r.Groups {
			if len(allowed) > 0 && allowed[0] == g && len(deleted) > 0 {
				resp.Groups = append(resp.Groups, deleted[0])
				allowed, deleted = allowed[1:], deleted[1:]
				continue
			}
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}}
}
