package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/auth"
	"github.com/samsa-io/samsa/internal/protocol"
)

// DescribeUserScramCredentials (key 50), v0: which SCRAM mechanisms each
// user has a credential for, with the iterations (KIP-554); never salts or
// keys. Users null or empty: every user with a credential. A named user
// without any gets RESOURCE_NOT_FOUND, a user named twice
// DUPLICATE_RESOURCE, as Kafka answers. The credentials are in etcd
// (internal/coord, scram/). With an authorizer, it needs DESCRIBE on the
// cluster (else CLUSTER_AUTHORIZATION_FAILED).
func (b *Broker) handleDescribeUserScramCredentials(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !b.authz(req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		msg := "DescribeUserScramCredentials needs DESCRIBE on the cluster"
		resp.ErrorMessage = &msg
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		users, err := b.client.ScramUsers(ctx)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			msg := err.Error()
			resp.ErrorMessage = &msg
			return resp
		}
		result := func(name string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
			res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			res.User = name
			return res
		}
		if len(r.Users) == 0 {
			for _, u := range users {
				res := result(u.User)
				for i, m := range u.Mechanisms {
					ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					ci.Mechanism, ci.Iterations = scramMechanismCode(m), int32(u.Iterations[i])
					res.CredentialInfos = append(res.CredentialInfos, ci)
				}
				resp.Results = append(resp.Results, res)
			}
			return resp
		}
		count := map[string]int{}
		for _, u := range r.Users {
			count[u.Name]++
		}
		byName := map[string]int{}
		for i, u := range users {
			byName[u.User] = i
		}
		for _, ru := range r.Users {
			res := result(ru.Name)
			i, found := byName[ru.Name]
			switch {
			case count[ru.Name] > 1:
				res.ErrorCode = kerr.DuplicateResource.Code
				msg := "user named more than once in the request"
				res.ErrorMessage = &msg
			case !found:
				res.ErrorCode = kerr.ResourceNotFound.Code
				msg := "Attempt to describe a user credential that does not exist"
				res.ErrorMessage = &msg
			default:
				u := users[i]
				for j, m := range u.Mechanisms {
					ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					ci.Mechanism, ci.Iterations = scramMechanismCode(m), int32(u.Iterations[j])
					res.CredentialInfos = append(res.CredentialInfos, ci)
				}
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	}}
}

// scramMechanismCode is Kafka's ScramMechanism type: 1 SCRAM-SHA-256, 2
// SCRAM-SHA-512, 0 unknown.
func scramMechanismCode(m string) int8 {
	switch m {
	case auth.MechanismScramSHA256:
		return 1
	case auth.MechanismScramSHA512:
		return 2
	}
	return 0
}

// scramMechanismName is the inverse of scramMechanismCode; "" for unknown.
func scramMechanismName(code int8) string {
	switch code {
	case 1:
		return auth.MechanismScramSHA256
	case 2:
		return auth.MechanismScramSHA512
	}
	return ""
}
