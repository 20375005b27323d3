package meta

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"
)

// ClusterResourceName is the name of the one Cluster resource of ACLs.
const ClusterResourceName = "kafka-cluster"

// ACL is one access control entry (issue 12; docs/security.md): who
// (Principal, from Host) may or may not (Permission) do what (Operation)
// to which resources (ResourceType, and ResourceName read as PatternType
// says). The enums take Kafka's wire values and are stored by Kafka's
// names ("TOPIC", "PREFIXED", "READ"...). Only what ValidateACL accepts
// is ever stored: no ANY, MATCH or unknown value.
type ACL struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	// Principal is "User:<name>" or the wildcard "User:*".
	Principal string `json:"principal"`
	// Host is a client IP address, or "*" for any.
	Host       string     `json:"host"`
	Operation  Operation  `json:"operation"`
	Permission Permission `json:"permission"`
}

// ResourceType is an ACL's resource type, by Kafka's code.
type ResourceType int8

// PatternType says how an ACL's resource name matches, by Kafka's code.
type PatternType int8

// Operation is what an ACL allows or denies, by Kafka's code.
type Operation int8

// Permission is ALLOW or DENY, by Kafka's code.
type Permission int8

// The values of Kafka's AclResourceType, PatternType, AclOperation and
// AclPermissionType (0 is UNKNOWN). ANY and MATCH select in filters only.
const (
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5

	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4

	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12

	PermissionAny   Permission = 1
	PermissionDeny  Permission = 2
	PermissionAllow Permission = 3
)

var (
	resourceTypeNames = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"}
	patternTypeNames  = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	operationNames    = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
		"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
	permissionNames = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

func enumName(names []string, v int8) string {
	if v < 0 || int(v) >= len(names) {
		return fmt.Sprintf("UNKNOWN(%d)", v)
	}
	return names[v]
}

func parseEnum(names []string, what string, text []byte) (int8, error) {
	for i, n := range names {
		if i > 0 && n == string(text) {
			return int8(i), nil
		}
	}
	return 0, fmt.Errorf("meta: unknown %s %q", what, text)
}

func (t ResourceType) String() string { return enumName(resourceTypeNames, int8(t)) }
func (t PatternType) String() string  { return enumName(patternTypeNames, int8(t)) }
func (o Operation) String() string    { return enumName(operationNames, int8(o)) }
func (p Permission) String() string   { return enumName(permissionNames, int8(p)) }

// MarshalText and UnmarshalText store the enums by name.
func (t ResourceType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }
func (t PatternType) MarshalText() ([]byte, error)  { return []byte(t.String()), nil }
func (o Operation) MarshalText() ([]byte, error)    { return []byte(o.String()), nil }
func (p Permission) MarshalText() ([]byte, error)   { return []byte(p.String()), nil }

func (t *ResourceType) UnmarshalText(b []byte) error {
	v, err := parseEnum(resourceTypeNames, "resource type", b)
	*t = ResourceType(v)
	return err
}

func (t *PatternType) UnmarshalText(b []byte) error {
	v, err := parseEnum(patternTypeNames, "pattern type", b)
	*t = PatternType(v)
	return err
}

func (o *Operation) UnmarshalText(b []byte) error {
	v, err := parseEnum(operationNames, "operation", b)
	*o = Operation(v)
	return err
}

func (p *Permission) UnmarshalText(b []byte) error {
	v, err := parseEnum(permissionNames, "permission", b)
	*p = Permission(v)
	return err
}

// MaxACLStringLen bounds an ACL's resource name, principal and host, so
// that a CreateAcls request of many ACLs stays within what etcd takes in
// one transaction (1.5 MiB by default).
const MaxACLStringLen = 2048

// CanonicalHost is the form hosts are stored and compared in: an IP
// address as Go prints it (IPv6 compressed, "::1", where Kafka's Java
// prints "0:0:0:0:0:0:0:1"), so that an ACL written either way matches
// the client's address; "*" and anything that is not an IP address are
// kept as they are (the latter matches no client, as in Kafka).
func CanonicalHost(h string) string {
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// ValidateACL checks an ACL that is to be created, with Kafka's rules:
// a concrete resource type (Topic, Group, Cluster, TransactionalId:
// delegation tokens and users are not served), a LITERAL or PREFIXED
// pattern over a non-empty name (the Cluster's is kafka-cluster),
// a principal of the form Type:name, a host, a concrete operation and
// ALLOW or DENY. The error says what is wrong.
func ValidateACL(a ACL) error {
	switch a.ResourceType {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID:
	default:
		return fmt.Errorf("resource type %v: want TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID", a.ResourceType)
	}
	switch a.PatternType {
	case PatternLiteral, PatternPrefixed:
	default:
		return fmt.Errorf("pattern type %v: want LITERAL or PREFIXED", a.PatternType)
	}
	if a.ResourceName == "" {
		return errors.New("empty resource name")
	}
	if a.ResourceType == ResourceCluster && a.ResourceName != ClusterResourceName {
		return fmt.Errorf("the only CLUSTER resource is %q", ClusterResourceName)
	}
	for what, v := range map[string]string{"resource name": a.ResourceName, "principal": a.Principal, "host": a.Host} {
		if len(v) > MaxACLStringLen {
			return fmt.Errorf("%s of %d bytes: at most %d", what, len(v), MaxACLStringLen)
		}
		// Stored as JSON, which would replace invalid bytes: the ACL read
		// back would not be the one created.
		if !utf8.ValidString(v) {
			return fmt.Errorf("%s is not valid UTF-8", what)
		}
	}
	if typ, name, ok := strings.Cut(a.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Errorf("principal %q: want Type:name, as in User:alice or User:*", a.Principal)
	}
	if a.Host == "" {
		return errors.New("empty host: want an IP address or *")
	}
	if a.Operation <= OpAny || a.Operation > OpIdempotentWrite {
		return fmt.Errorf("operation %v: want a concrete operation (READ, WRITE, ... or ALL)", a.Operation)
	}
	if a.Permission != PermissionAllow && a.Permission != PermissionDeny {
		return fmt.Errorf("permission %v: want ALLOW or DENY", a.Permission)
	}
	return nil
}
