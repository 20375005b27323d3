package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/auth"
	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

// AlterUserScramCredentials (key 51), v0: upserts and deletes SCRAM
// credentials (KIP-554). The client sends the salt and the salted password
// (PBKDF2 of the password), never the password; the broker derives the
// stored and server keys from them and keeps those in etcd, so every
// broker authenticates with the new credential at the next login. One
// result per user, as Kafka: a user whose credential of one mechanism is
// altered more than once in the request gets DUPLICATE_RESOURCE for all
// of it, an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384, an empty
// name, salt or salted password UNACCEPTABLE_CREDENTIAL, a deletion of a
// credential that does not exist RESOURCE_NOT_FOUND; a user's changes are
// made together or not at all, and the other users' are made. With an authorizer, it needs ALTER on the cluster
// (else CLUSTER_AUTHORIZATION_FAILED for every user, nothing changed).
func (b *Broker) handleAlterUserScramCredentials(ctx context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !b.authz(req).cluster(kmsg.ACLOperationAlter) {
		seen := map[string]bool{}
		msg := "AlterUserScramCredentials needs ALTER on the cluster"
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode, res.ErrorMessage = user, kerr.ClusterAuthorizationFailed.Code, &msg
				resp.Results = append(resp.Results, res)
			}
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
		return reply(resp)
	}
	return protocol.Response{Later: func() kmsg.Response {
		type change struct {
			user, mechanism string
			del             bool
			iterations      int
			salt, salted    []byte
			mechanismCode   int8
		}
		var order []string
		changes := map[string][]change{}
		add := func(c change) {
			if _, seen := changes[c.user]; !seen {
				order = append(order, c.user)
			}
			changes[c.user] = append(changes[c.user], c)
		}
		for _, d := range r.Deletions {
			add(change{user: d.Name, mechanism: scramMechanismName(d.Mechanism), del: true, mechanismCode: d.Mechanism})
		}
		for _, u := range r.Upsertions {
			add(change{user: u.Name, mechanism: scramMechanismName(u.Mechanism), iterations: int(u.Iterations),
				salt: u.Salt, salted: u.SaltedPassword, mechanismCode: u.Mechanism})
		}
		for _, user := range order {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User = user
			fail := func(code int16, msg string) {
				res.ErrorCode = code
				res.ErrorMessage = &msg
			}
			cs := changes[user]
			mechs := map[string]bool{}
			for _, c := range cs {
				if mechs[c.mechanism] {
					fail(kerr.DuplicateResource.Code, "a credential altered twice in one request")
				}
				mechs[c.mechanism] = true
			}
			if res.ErrorCode == 0 {
				for _, c := range cs {
					switch {
					case user == "":
						fail(kerr.UnacceptableCredential.Code, "the user name is empty")
					case c.mechanism == "":
						fail(kerr.UnsupportedSaslMechanism.Code, "unknown SCRAM mechanism")
					case !c.del && (c.iterations < auth.ScramMinIterations || c.iterations > auth.ScramMaxIterations):
						fail(kerr.UnacceptableCredential.Code, "iterations must be between 4096 and 16384")
					case !c.del && (len(c.salt) == 0 || len(c.salted) == 0):
						fail(kerr.UnacceptableCredential.Code, "empty salt or salted password")
					}
					if res.ErrorCode != 0 {
						break
					}
				}
			}
			// Every change of the user is checked before any is made,
			// and all are made in one etcd transaction: an error means
			// the user's credentials are as they were (Kafka's
			// ScramControlManager checks deletions first too).
			var puts []meta.ScramCredential
			var deletes []string
			for _, c := range cs {
				if res.ErrorCode != 0 {
					break
				}
				if c.del {
					deletes = append(deletes, c.mechanism)
					continue
				}
				cred, err := auth.ScramCredentialFromSalted(c.mechanism, c.salt, c.salted, c.iterations)
				if err != nil {
					code := kerr.UnacceptableCredential.Code
					if errors.Is(err, auth.ErrUnknownMechanism) {
						code = kerr.UnsupportedSaslMechanism.Code
					}
					fail(code, err.Error())
					break
				}
				puts = append(puts, metaScram(cred))
			}
			if res.ErrorCode == 0 {
				err := b.client.AlterScramCredentials(ctx, user, puts, deletes)
				switch {
				case errors.Is(err, coord.ErrNotFound):
					fail(kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist")
				case err != nil:
					fail(errorCode(err), err.Error())
				}
			}
			if res.ErrorCode == 0 {
				b.logger.Info("SCRAM credentials altered", "user", user, "by", principalOf(req))
			}
			resp.Results = append(resp.Results, res)
		}
		return resp
	}}
}

// principalOf is the principal of req's connection, for logs.
func principalOf(req *protocol.Request) string {
	if req.Conn == nil {
		return protocol.Anonymous
	}
	return req.Conn.Principal
}
