package auth

import (
	"testing"

	"github.com/samsa-io/samsa/internal/meta"
)

// Kafka's authorizeByResourceType with allow.everyone.if.no.acl.found:
// a resource that no ACL covers is allowed, so ACLs of the type for other
// resources do not refuse an idempotent producer's InitProducerId (WRITE
// on some topic), unless a LITERAL "*" ACL covers every topic.
func TestAuthorizeAnyAllowEveryoneIfNoACL(t *testing.T) {
	acls := []meta.ACL{
		{ResourceType: meta.ResourceTopic, ResourceName: "secret", PatternType: meta.PatternLiteral,
			Principal: "User:bob", Host: "*", Operation: meta.OpWrite, Permission: meta.PermissionAllow},
		{ResourceType: meta.ResourceCluster, ResourceName: meta.ClusterResourceName, PatternType: meta.PatternLiteral,
			Principal: "User:admin", Host: "*", Operation: meta.OpAlter, Permission: meta.PermissionAllow},
	}
	x := NewACLs(acls, nil, true)
	// carol may write any topic other than "secret" (no ACL covers it).
	if !x.Authorize("User:carol", "10.0.0.1", meta.OpWrite, meta.ResourceTopic, "other") {
		t.Fatal("precondition: carol may write topic other under allow.everyone.if.no.acl.found")
	}
	// ...but IDEMPOTENT_WRITE on the cluster is refused (the cluster has an ACL).
	if x.Authorize("User:carol", "10.0.0.1", meta.OpIdempotentWrite, meta.ResourceCluster, meta.ClusterResourceName) {
		t.Fatal("precondition: cluster has ACLs, IDEMPOTENT_WRITE should be refused")
	}
	// Kafka: authorizeByResourceType(WRITE, TOPIC) = ALLOWED (the "hardcode" probe).
	if !x.AuthorizeAny("User:carol", "10.0.0.1", meta.OpWrite, meta.ResourceTopic) {
		t.Error("AuthorizeAny(carol, Write, Topic) = false; Kafka's authorizeByResourceType answers ALLOWED " +
			"(no ACL covers the probe resource and allow.everyone.if.no.acl.found=true), so InitProducerId is refused where Kafka grants it")
	}
	// A LITERAL "*" ACL covers every topic: the ACLs decide.
	x = NewACLs(append(acls, meta.ACL{ResourceType: meta.ResourceTopic, ResourceName: "*", PatternType: meta.PatternLiteral,
		Principal: "User:bob", Host: "*", Operation: meta.OpRead, Permission: meta.PermissionAllow}), nil, true)
	if x.AuthorizeAny("User:carol", "10.0.0.1", meta.OpWrite, meta.ResourceTopic) {
		t.Error("AuthorizeAny(carol, Write, Topic) with a LITERAL * topic ACL for bob only = true")
	}
}
