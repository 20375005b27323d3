package broker

// DescribeGroups (key 15), versions 0–5 (flexible from v5). Authorized
// operations (v3+) are not reported (-2147483648, "not requested" in
// Kafka's encoding) since samsa has no ACLs.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	resp.Groups = b.groups.Describe(r.Groups)
	return reply(resp)
}
