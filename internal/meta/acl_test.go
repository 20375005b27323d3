package meta

import (
	"strings"
	"testing"
)

// ACLs are stored by Kafka's names and read back; an unknown name is a
// decode error, not a zero value.
func TestACLEncoding(t *testing.T) {
	a := ACL{ResourceType: ResourceTransactionalID, ResourceName: "tx-", PatternType: PatternPrefixed,
		Principal: "User:alice", Host: "*", Operation: OpIdempotentWrite, Permission: PermissionDeny}
	b, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"TRANSACTIONAL_ID"`, `"PREFIXED"`, `"IDEMPOTENT_WRITE"`, `"DENY"`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("%s lacks %s", b, name)
		}
	}
	var back ACL
	if err := Decode(b, &back); err != nil || back != a {
		t.Fatalf("decoded %+v, %v; want %+v", back, err, a)
	}
	bad := strings.Replace(string(b), `"DENY"`, `"MAYBE"`, 1)
	if err := Decode([]byte(bad), &back); err == nil {
		t.Errorf("decoded permission MAYBE")
	}
	if s := Operation(99).String(); s != "UNKNOWN(99)" {
		t.Errorf("Operation(99) prints %q", s)
	}
}

func TestValidateACL(t *testing.T) {
	ok := ACL{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral,
		Principal: "User:a", Host: "*", Operation: OpRead, Permission: PermissionAllow}
	if err := ValidateACL(ok); err != nil {
		t.Fatalf("valid ACL refused: %v", err)
	}
	for name, change := range map[string]func(*ACL){
		"any resource":      func(a *ACL) { a.ResourceType = ResourceAny },
		"resource 6":        func(a *ACL) { a.ResourceType = 6 },
		"match pattern":     func(a *ACL) { a.PatternType = PatternMatch },
		"empty name":        func(a *ACL) { a.ResourceName = "" },
		"cluster named foo": func(a *ACL) { a.ResourceType, a.ResourceName = ResourceCluster, "foo" },
		"long name":         func(a *ACL) { a.ResourceName = strings.Repeat("n", MaxACLStringLen+1) },
		"bare principal":    func(a *ACL) { a.Principal = "alice" },
		"empty host":        func(a *ACL) { a.Host = "" },
		"any operation":     func(a *ACL) { a.Operation = OpAny },
		"operation 13":      func(a *ACL) { a.Operation = 13 },
		"any permission":    func(a *ACL) { a.Permission = PermissionAny },
	} {
		a := ok
		change(&a)
		if ValidateACL(a) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCanonicalHost(t *testing.T) {
	for in, want := range map[string]string{
		"*": "*", "10.0.0.1": "10.0.0.1", "0:0:0:0:0:0:0:1": "::1", "::1": "::1",
		"2001:DB8:0:0:0:0:0:1": "2001:db8::1", "::ffff:10.0.0.1": "10.0.0.1", "host.example": "host.example",
	} {
		if got := CanonicalHost(in); got != want {
			t.Errorf("CanonicalHost(%q) = %q, want %q", in, got, want)
		}
	}
}
