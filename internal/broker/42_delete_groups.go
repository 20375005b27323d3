package broker

// DeleteGroups (key 42), versions 0–2 (flexible from v2). Only empty
// groups can be deleted (NON_EMPTY_GROUP otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDeleteGroups(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	return protocol.Response{Later: func() kmsg.Response {
		resp.Groups = b.groups.Delete(ctx, r.Groups)
		return resp
	}}
}
