package auth

import (
	"fmt"
	"strings"

	"github.com/samsa-io/samsa/internal/meta"
)

// WildcardPrincipal is the ACL principal that matches every user.
const WildcardPrincipal = "User:*"

// WildcardResource is the LITERAL resource name that matches every
// resource of its type.
const WildcardResource = "*"

// ACLs is an authorization index; build one with NewACLs. It is not
// modified after it is built and is safe for concurrent use.
type ACLs struct {
	super        map[string]bool
	allowIfNoACL bool
	byType       map[meta.ResourceType]*typeACLs
	// closed refuses everyone but super users (FailClosed).
	closed bool
}

// FailClosed returns a copy of x that refuses every principal but the
// super users: for a cluster whose stored ACLs include one that cannot be
// read, which might be a DENY.
func (x *ACLs) FailClosed() *ACLs {
	c := *x
	c.closed = true
	return &c
}

// typeACLs holds the ACLs of one resource type by pattern.
type typeACLs struct {
	literal  map[string][]meta.ACL // by name, including "*"
	prefixed map[string][]meta.ACL // by prefix
	// maxPrefix is the length of the longest prefix.
	maxPrefix int
}

// NewACLs indexes acls. superUsers are principals ("User:admin") that
// every operation is allowed to; allowIfNoACL is
// allow.everyone.if.no.acl.found.
func NewACLs(acls []meta.ACL, superUsers []string, allowIfNoACL bool) *ACLs {
	x := &ACLs{super: map[string]bool{}, allowIfNoACL: allowIfNoACL, byType: map[meta.ResourceType]*typeACLs{}}
	for _, u := range superUsers {
		x.super[u] = true
	}
	for _, a := range acls {
		// Matched against the client's address as Go prints it:
		// "0:0:0:0:0:0:0:1", as Kafka users write ::1, must match too.
		a.Host = meta.CanonicalHost(a.Host)
		t := x.byType[a.ResourceType]
		if t == nil {
			t = &typeACLs{literal: map[string][]meta.ACL{}, prefixed: map[string][]meta.ACL{}}
			x.byType[a.ResourceType] = t
		}
		switch a.PatternType {
		case meta.PatternLiteral:
			t.literal[a.ResourceName] = append(t.literal[a.ResourceName], a)
		case meta.PatternPrefixed:
			t.prefixed[a.ResourceName] = append(t.prefixed[a.ResourceName], a)
			t.maxPrefix = max(t.maxPrefix, len(a.ResourceName))
		}
	}
	return x
}

// IsSuperUser reports whether principal is in super.users.
func (x *ACLs) IsSuperUser(principal string) bool { return x.super[principal] }

// matching calls f with every ACL whose pattern covers the resource,
// until f returns false.
func (t *typeACLs) matching(name string, f func(meta.ACL) bool) {
	for _, a := range t.literal[name] {
		if !f(a) {
			return
		}
	}
	if name != WildcardResource {
		for _, a := range t.literal[WildcardResource] {
			if !f(a) {
				return
			}
		}
	}
	for n := min(len(name), t.maxPrefix); n > 0; n-- {
		for _, a := range t.prefixed[name[:n]] {
			if !f(a) {
				return
			}
		}
	}
}

func principalMatches(a meta.ACL, principal string) bool {
	return a.Principal == principal || a.Principal == WildcardPrincipal
}

func hostMatches(a meta.ACL, host string) bool { return a.Host == host || a.Host == "*" }

// allowImplies reports whether an ALLOW of granted permits op.
func allowImplies(granted, op meta.Operation) bool {
	if granted == op || granted == meta.OpAll {
		return true
	}
	switch op {
	case meta.OpDescribe:
		switch granted {
		case meta.OpRead, meta.OpWrite, meta.OpDelete, meta.OpAlter:
			return true
		}
	case meta.OpDescribeConfigs:
		return granted == meta.OpAlterConfigs
	}
	return false
}

// Authorize reports whether principal, connected from host (an IP
// address in meta.CanonicalHost's form), may perform op on the resource
// typ/name.
func (x *ACLs) Authorize(principal, host string, op meta.Operation, typ meta.ResourceType, name string) bool {
	if x.super[principal] {
		return true
	}
	if x.closed {
		return false
	}
	t := x.byType[typ]
	if t == nil {
		return x.allowIfNoACL
	}
	matched, denied, allowed := false, false, false
	t.matching(name, func(a meta.ACL) bool {
		matched = true
		if !principalMatches(a, principal) || !hostMatches(a, host) {
			return true
		}
		switch a.Permission {
		case meta.PermissionDeny:
			if a.Operation == op || a.Operation == meta.OpAll {
				denied = true
				return false
			}
		case meta.PermissionAllow:
			if allowImplies(a.Operation, op) {
				allowed = true
			}
		}
		return true
	})
	switch {
	case denied:
		return false
	case allowed:
		return true
	default:
		return !matched && x.allowIfNoACL
	}
}

// AuthorizeAny reports whether principal, from host, may perform op on
// at least one resource of type typ: some ALLOW covers the operation and
// no DENY covers all that this ALLOW covers (a DENY of the same LITERAL
// name, of the LITERAL "*", or of a PREFIXED pattern that is a prefix of
// the ALLOW's pattern). With allow.everyone.if.no.acl.found, a resource
// that no ACL covers counts too: then only a LITERAL "*" ACL of the type
// makes the answer depend on the ACLs.
func (x *ACLs) AuthorizeAny(principal, host string, op meta.Operation, typ meta.ResourceType) bool {
	if x.super[principal] {
		return true
	}
	if x.closed {
		return false
	}
	t := x.byType[typ]
	if t == nil {
		return x.allowIfNoACL
	}
	// As Kafka's authorizeByResourceType: with allow.everyone.if.no.acl.found,
	// a resource that no ACL covers is allowed, and one exists unless the
	// LITERAL "*" covers every name (PREFIXED patterns never cover them all).
	if x.allowIfNoACL && len(t.literal[WildcardResource]) == 0 {
		return true
	}
	denies := func(a meta.ACL) bool {
		return a.Permission == meta.PermissionDeny && principalMatches(a, principal) && hostMatches(a, host) &&
			(a.Operation == op || a.Operation == meta.OpAll)
	}
	// covered reports whether a DENY applies to every resource that the
	// pattern (name, prefixed) covers.
	covered := func(name string, prefixed bool) bool {
		for _, a := range t.literal[WildcardResource] {
			if denies(a) {
				return true
			}
		}
		if !prefixed {
			for _, a := range t.literal[name] {
				if denies(a) {
					return true
				}
			}
		}
		for n := min(len(name), t.maxPrefix); n > 0; n-- {
			for _, a := range t.prefixed[name[:n]] {
				if denies(a) {
					return true
				}
			}
		}
		return false
	}
	grants := func(a meta.ACL) bool {
		return a.Permission == meta.PermissionAllow && principalMatches(a, principal) && hostMatches(a, host) &&
			allowImplies(a.Operation, op)
	}
	for name, as := range t.literal {
		for _, a := range as {
			if grants(a) && !covered(name, false) {
				return true
			}
		}
	}
	for name, as := range t.prefixed {
		for _, a := range as {
			if grants(a) && !covered(name, true) {
				return true
			}
		}
	}
	return false
}

// ACLFilter selects ACLs, as DescribeAcls and DeleteAcls do: a nil
// string and the ANY values match everything; PatternType MATCH with a
// name selects the ACLs that would apply to that resource (its LITERAL
// name, the LITERAL "*" and the PREFIXED prefixes of the name).
type ACLFilter struct {
	ResourceType meta.ResourceType
	ResourceName *string
	PatternType  meta.PatternType
	Principal    *string
	Host         *string
	Operation    meta.Operation
	Permission   meta.Permission
}

// maxFilterResourceType is Kafka's highest resource type, USER (7): a
// filter may name DELEGATION_TOKEN (6) or USER, and then selects nothing,
// since samsa stores no ACL of those types.
const maxFilterResourceType = 7

// maxFilterOperation is Kafka's highest operation code that a filter may
// name (the delegation token ones and beyond select nothing here).
const maxFilterOperation = 15

// ValidateACLFilter refuses a filter with an UNKNOWN value (a client's
// enum that samsa does not know, or 0).
func ValidateACLFilter(f ACLFilter) error {
	switch {
	case f.ResourceType < meta.ResourceAny || f.ResourceType > maxFilterResourceType:
		return fmt.Errorf("unknown resource type %d", int8(f.ResourceType))
	case f.PatternType < meta.PatternAny || f.PatternType > meta.PatternPrefixed:
		return fmt.Errorf("unknown pattern type %d", int8(f.PatternType))
	case f.Operation < meta.OpAny || f.Operation > maxFilterOperation:
		return fmt.Errorf("unknown operation %d", int8(f.Operation))
	case f.Permission < meta.PermissionAny || f.Permission > meta.PermissionAllow:
		return fmt.Errorf("unknown permission type %d", int8(f.Permission))
	}
	return nil
}

// Matches reports whether f selects a.
func (f ACLFilter) Matches(a meta.ACL) bool {
	if f.ResourceType != meta.ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	switch f.PatternType {
	case meta.PatternAny:
		if f.ResourceName != nil && *f.ResourceName != a.ResourceName {
			return false
		}
	case meta.PatternMatch:
		if f.ResourceName != nil {
			name := *f.ResourceName
			switch a.PatternType {
			case meta.PatternLiteral:
				if a.ResourceName != name && a.ResourceName != WildcardResource {
					return false
				}
			case meta.PatternPrefixed:
				if !strings.HasPrefix(name, a.ResourceName) {
					return false
				}
			}
		}
	default:
		if f.PatternType != a.PatternType || (f.ResourceName != nil && *f.ResourceName != a.ResourceName) {
			return false
		}
	}
	return (f.Principal == nil || *f.Principal == a.Principal) &&
		(f.Host == nil || *f.Host == a.Host) &&
		(f.Operation == meta.OpAny || f.Operation == a.Operation) &&
		(f.Permission == meta.PermissionAny || f.Permission == a.Permission)
}
