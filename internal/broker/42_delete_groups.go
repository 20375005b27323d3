package broker

// DeleteGroups (key 42), versions 0–2 (flexible from v2). Only empty
// groups can be deleted (NON_EMPTY_GROUP otherwise). The groups are gone
// as the request arrives; the answer waits for the tombstones' commit.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDeleteGroups(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	wait := b.groups.StartDelete(r.Groups)
	return protocol.Response{Later: func() kmsg.Response {
		resp.Groups = wait(ctx)
		return resp
	}}
}
