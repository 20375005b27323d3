package broker

// ACL authorization (issue 12; docs/security.md, "Authorization").
//
// With authorizer.class.name set, every request is checked against the
// cluster's ACLs (stored in etcd, mirrored by the metadata cache) the way
// Kafka's StandardAuthorizer checks it: each handler asks for the
// operation Kafka requires of each resource it touches and answers
// TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED exactly
// where Kafka does (the table is in docs/security.md). The index is
// rebuilt when the snapshot's ACLs change, so an ACL created or deleted
// on any broker applies on every broker as soon as its cache sees it.
// Without an authorizer, every principal may do everything and the
// ACL requests answer SECURITY_DISABLED, as Kafka's do.

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/auth"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

// maxACLsPerRequest bounds the ACLs one CreateAcls or DeleteAcls writes,
// as Kafka bounds the records of one user operation (10000): each request
// is one etcd transaction, and an external etcd needs --max-txn-ops and
// --max-request-bytes raised for large ones.
const maxACLsPerRequest = 10000

// errTopicAuthorization is TOPIC_AUTHORIZATION_FAILED where an error
// value carries the answer.
var errTopicAuthorization = errors.New("topic authorization failed")

// authorizerClasses are the authorizer.class.name values that select
// samsa's ACL authorizer: Kafka's KRaft and ZooKeeper-era ACL
// authorizers, which it behaves as.
var authorizerClasses = []string{
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"kafka.security.authorizer.AclAuthorizer",
}

// aclIndex caches the authorization index built from one snapshot's ACLs:
// requests read it without a lock; the first request to see a snapshot
// whose ACLs changed rebuilds it, under mu so that only one does.
type aclIndex struct {
	cur atomic.Pointer[builtACLs]
	mu  sync.Mutex
}

// builtACLs is an index and the snapshot ACLRevision it reflects.
type builtACLs struct {
	revision int64
	acls     *auth.ACLs
}

// acls returns the current authorization index, nil without an
// authorizer.
func (b *Broker) acls() *auth.ACLs {
	if b.cfg.Authorizer == "" {
		return nil
	}
	s := b.cache.Snapshot()
	x := &b.aclIndex
	// ACLRevision only grows: an index at least as new as the snapshot
	// serves (a request that read an older snapshot gets newer ACLs).
	if cur := x.cur.Load(); cur != nil && cur.revision >= s.ACLRevision {
		return cur.acls
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if cur := x.cur.Load(); cur != nil && cur.revision >= s.ACLRevision {
		return cur.acls
	}
	list := make([]meta.ACL, 0, len(s.ACLs))
	for _, a := range s.ACLs {
		list = append(list, a)
	}
	acls := auth.NewACLs(list, b.cfg.SuperUsers, b.cfg.AllowEveryoneIfNoACL)
	if len(s.BadACLs) > 0 {
		b.logger.Error("ACLs in etcd do not decode: every principal but the super users is refused until they are deleted",
			"count", len(s.BadACLs))
		acls = acls.FailClosed()
	}
	built := &builtACLs{revision: s.ACLRevision, acls: acls}
	x.cur.Store(built)
	return built.acls
}

// authz answers the authorization questions of one request.
type authz struct {
	acls            *auth.ACLs // nil: no authorizer, all allowed
	principal, host string
}

// authz returns the authorization context of req.
func (b *Broker) authz(req *protocol.Request) authz {
	a := authz{acls: b.acls()}
	if a.acls == nil || req.Conn == nil {
		return a
	}
	a.principal = req.Conn.Principal
	if addr, ok := req.Conn.Remote.(*net.TCPAddr); ok {
		a.host = addr.IP.String()
	} else if req.Conn.Remote != nil {
		a.host, _, _ = net.SplitHostPort(req.Conn.Remote.String())
	}
	return a
}

// enabled reports whether an authorizer is configured.
func (a authz) enabled() bool { return a.acls != nil }

// The kmsg enums and meta's have the same values (Kafka's codes).
func (a authz) allowed(op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return a.acls == nil || a.acls.Authorize(a.principal, a.host, meta.Operation(op), meta.ResourceType(typ), name)
}

func (a authz) topic(op kmsg.ACLOperation, name string) bool {
	return a.allowed(op, kmsg.ACLResourceTypeTopic, name)
}

func (a authz) group(op kmsg.ACLOperation, name string) bool {
	return a.allowed(op, kmsg.ACLResourceTypeGroup, name)
}

func (a authz) cluster(op kmsg.ACLOperation) bool {
	return a.allowed(op, kmsg.ACLResourceTypeCluster, meta.ClusterResourceName)
}

func (a authz) transactionalID(op kmsg.ACLOperation, id string) bool {
	return a.allowed(op, kmsg.ACLResourceTypeTransactionalId, id)
}

// anyOf reports whether op is allowed on some resource of type typ.
func (a authz) anyOf(op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	return a.acls == nil || a.acls.AuthorizeAny(a.principal, a.host, meta.Operation(op), meta.ResourceType(typ))
}

// Operations samsa grants per resource type, for the authorized
// operations bit fields of Metadata and DescribeGroups (KIP-430).
var (
	topicOps   = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	groupOps   = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete}
	clusterOps = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}
)

// authorizedOps returns the KIP-430 bit field (bit n set = operation n
// allowed) of the operations in ops that the principal may perform on the
// resource.
func (a authz) authorizedOps(typ kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		if a.allowed(op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// aclAlterRefusal is why req, a CreateAcls or DeleteAcls (what), may not
// change ACLs: no authorizer (SECURITY_DISABLED) or no ALTER on the
// cluster; code 0 if it may.
func (b *Broker) aclAlterRefusal(req *protocol.Request, what string) (code int16, msg string) {
	az := b.authz(req)
	switch {
	case !az.enabled():
		return kerr.SecurityDisabled.Code, noAuthorizerMessage
	case !az.cluster(kmsg.ACLOperationAlter):
		return kerr.ClusterAuthorizationFailed.Code, what + " needs ALTER on the cluster"
	}
	return 0, ""
}

// aclFilter is the filter of a DescribeAcls request or of one DeleteAcls
// filter; v0 has no pattern type and selects LITERAL patterns, as Kafka.
func aclFilter(version int16, typ kmsg.ACLResourceType, name *string, pattern kmsg.ACLResourcePatternType,
	principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) auth.ACLFilter {
	f := auth.ACLFilter{ResourceType: meta.ResourceType(typ), ResourceName: name, PatternType: meta.PatternType(pattern),
		Principal: principal, Host: host, Operation: meta.Operation(op), Permission: meta.Permission(perm)}
	if version == 0 {
		f.PatternType = meta.PatternLiteral
	}
	return f
}
