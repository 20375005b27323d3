package auth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/testutil"
)

// kip371Rules are the rules of KIP-371 and of Kafka's documentation
// (ssl.principal.mapping.rules).
const kip371Rules = `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT`

func TestPrincipalMappingKIP371(t *testing.T) {
	m, err := ParsePrincipalMappingRules(kip371Rules)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ dn, want string }{
		// The two examples of Kafka's documentation.
		{"CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser"},
		{"CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"},
		// The third rule: any CN, lower-cased.
		{"OU=eng,CN=Duke.Smith,O=Sun", "duke.smith"},
		{"cN=duke,OU=JavaSoft,O=Sun Microsystems", "duke"},
		// DEFAULT: no CN, the DN unchanged.
		{"OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"},
	}
	for _, tt := range tests {
		if got := m.Name(tt.dn); got != tt.want {
			t.Errorf("Name(%q) = %q, want %q", tt.dn, got, tt.want)
		}
	}
}

// TestPrincipalMappingKafkaExamples runs the cases of Kafka's
// SslPrincipalMapperTest.
func TestPrincipalMappingKafkaExamples(t *testing.T) {
	rules := strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", ")
	m, err := ParsePrincipalMappingRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ dn, want string }{
		{"CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"},
		{"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"},
		{"cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"},
		{"cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"},
		{"OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"},
	}
	for _, tt := range tests {
		if got := m.Name(tt.dn); got != tt.want {
			t.Errorf("Name(%q) = %q, want %q", tt.dn, got, tt.want)
		}
	}

	// An escaped comma in the DN, matched by a pattern with \\.
	m, err = ParsePrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`), `Tkac\, Adam`; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
}

// TestPrincipalMappingRulesSplitting checks where rules begin and end: the
// splitting cases of Kafka's SslPrincipalMapperTest, whose patterns hold
// commas, slashes and the words RULE and DEFAULT.
func TestPrincipalMappingRulesSplitting(t *testing.T) {
	tests := []struct {
		rules string
		want  []string
	}{
		{"DEFAULT", []string{"DEFAULT"}},
		{"RULE://", []string{"RULE://"}},
		{"RULE:/.*/", []string{"RULE:/.*/"}},
		{"RULE:/.*/L", []string{"RULE:/.*/L"}},
		{"RULE://,DEFAULT", []string{"RULE://", "DEFAULT"}},
		{"  RULE:// ,  DEFAULT  ", []string{"RULE://", "DEFAULT"}},
		{"  RULE:   /     / ,  DEFAULT  ", []string{"RULE:   /     /", "DEFAULT"}},
		{"  RULE:  /     /U   ,DEFAULT  ", []string{"RULE:  /     /U", "DEFAULT"}},
		{"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ", []string{"RULE:([A-Z]*)/$1/U", "RULE:([a-z]+)/$1/", "DEFAULT"}},
		// Empty rules are ignored.
		{",   , , ,      , , ,   ", nil},
		{",,RULE://,,,DEFAULT,,", []string{"RULE://", "DEFAULT"}},
		{",  , RULE: /   /    ,,,   DEFAULT, ,   ", []string{"RULE: /   /", "DEFAULT"}},
		{"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,", []string{"RULE:   /  /U", "DEFAULT"}},
		// Escapes.
		{`RULE:\/\\\(\)\n\t/\/\//`, []string{`RULE:\/\\\(\)\n\t/\/\//`}},
		{`RULE:\**\/+/*/L,RULE:\/*\**/**/`, []string{`RULE:\**\/+/*/L`, `RULE:\/*\**/**/`}},
		// Rules rule.
		{
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
			[]string{`RULE:,RULE:,/,RULE:,\//U`, `RULE:,/RULE:,/`, `RULE:,RULE:,/L,RULE:,/L`, `RULE:, DEFAULT, /DEFAULT/`, `DEFAULT`},
		},
		// The patterns of KIP-371 hold commas.
		{kip371Rules, []string{
			`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/`,
			`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L`,
			`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L`,
			`DEFAULT`,
		}},
		// Tabs and new lines are white space too.
		{"\tRULE:a/b/U ,\n DEFAULT\t", []string{"RULE:a/b/U", "DEFAULT"}},
	}
	for _, tt := range tests {
		t.Run(tt.rules, func(t *testing.T) {
			m, err := ParsePrincipalMappingRules(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range m.rules {
				got = append(got, m.rules[i].String())
			}
			if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
				t.Errorf("rules = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPrincipalMappingInvalidRules(t *testing.T) {
	tests := []string{
		// Kafka's SslPrincipalMapperTest.testInvalidRules.
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		// Trailing text, and rules cut short.
		"RULE:a/b/ x",
		"RULE:a/b/L x,DEFAULT",
		"DEFAULT x",
		"DEFAULT,RULE:",
		`RULE:a/b\/`,
		"RULE:a\\\n/b/",
		"x",
		// Java syntax Go's regexp refuses.
		`RULE:^(a)\1$/x/`,
		`RULE:^(?=CN).*$/x/`,
		`RULE:^CN=a*+$/x/`,
		`RULE:^\p{Lower}+$/x/`,
		// Java syntax Go's regexp would read with another meaning.
		`RULE:^CN=[a-z[0-9]]+$/x/`,
		`RULE:^CN=[[:alpha:]]+$/x/`,
		`RULE:^CN=[a-z&&[^e]]+$/x/`,
		`RULE:^CN=(a)\12$/x/`,
		`RULE:^CN=(a)\0101$/x/`,
		`RULE:^CN=\v$/x/`,
		`RULE:(?U)^CN=a$/x/`,
		`RULE:(?iU:^CN=a)$/x/`,
		// Replacements Java fails on at every mapping.
		`RULE:^CN=.*$/$1/`,
		`RULE:^(CN)=.*$/$x/`,
		`RULE:^(CN)=.*$/a$/`,
		`RULE:^(CN)=.*$/a\/`,
		`RULE:^(CN)=.*$/${name}/`,
		`RULE:^(CN)=.*$/${1/`,
	}
	for _, rules := range tests {
		t.Run(rules, func(t *testing.T) {
			m, err := ParsePrincipalMappingRules(rules)
			if err == nil {
				t.Fatalf("parsed as %q, want an error", m)
			}
			if !errors.Is(err, ErrMappingRules) {
				t.Errorf("error %v does not wrap ErrMappingRules", err)
			}
		})
	}
}

// TestPrincipalMappingJavaPatternsAccepted checks that the guard against
// Java syntax with another meaning in Go lets the ordinary forms through.
func TestPrincipalMappingJavaPatternsAccepted(t *testing.T) {
	tests := []struct{ rule, dn, want string }{
		{`RULE:^CN=([]a-z]+),.*$/$1/`, "CN=a]b,O=x", "a]b"},
		{`RULE:^CN=([^],]+),.*$/$1/`, "CN=ab,O=x", "ab"},
		{`RULE:^CN=([\[a-z]+),.*$/$1/`, "CN=[ab,O=x", "[ab"},
		{`RULE:^CN=\Q[x]\E,(.*)$/$1/`, "CN=[x],O=x", "O=x"},
		{`RULE:(?i:^cn=(.*)),O=x$/$1/`, "CN=ab,O=x", "ab"},
		{`RULE:(?<user>[a-z]+)@.*/${user}/`, "alice@example", "alice"},
		{`RULE:^CN=(a)\041$/$1/`, "CN=a!", "a"},
		{`RULE:^CN=(a)\x41\x{42}$/$1/`, "CN=aAB", "a"},
	}
	for _, tt := range tests {
		m, err := ParsePrincipalMappingRules(tt.rule)
		if err != nil {
			t.Errorf("%s: %v", tt.rule, err)
			continue
		}
		if got, ok := m.Map(tt.dn); !ok || got != tt.want {
			t.Errorf("%s: Map(%q) = %q, %v; want %q", tt.rule, tt.dn, got, ok, tt.want)
		}
	}
}

// TestPrincipalMappingReplacement checks Java's replaceAll semantics; the
// wanted values are what Kafka's SslPrincipalMapper (Java 17 and 25) gives.
func TestPrincipalMappingReplacement(t *testing.T) {
	const dn = "CN=x,O=y"
	tests := []struct{ rule, want string }{
		// Every match is replaced, including the empty match Java's
		// replaceAll finds right after a match and Go's ReplaceAll skips.
		{`RULE:(.*)/u-$1/`, "u-CN=x,O=yu-"},
		{`RULE:^(.*)$/u-$1/`, "u-CN=x,O=y"},
		{`RULE:.*/$0!/`, "CN=x,O=y!!"},
		{`RULE:(.*?)/[$1]/`, "[]C[]N[]=[]x[],[]O[]=[]y[]"},
		{`RULE:.*?/!/`, "!C!N!=!x!,!O!=!y!"},
		{`RULE:(.*)\b/<$1>/`, "<CN=x,O=y><>"},
		{`RULE:(.*)(\b|$)/<$1>/`, "<CN=x,O=y><>"},
		{`RULE:(.*)/a\/b$1/`, "a/bCN=x,O=ya/b"},
		// Group numbers: as many digits as name a group; a first digit
		// beyond the groups is literal (Kafka); $0 is the match.
		{`RULE:CN=(\w)(\w*).*/$2$1$12$3/`, "xx2$3"},
		{`RULE:CN=(x),O=(y)/$21|$12|$3|$03|$02/`, "y1|x2|$3|CN=x,O=y3|y"},
		{`RULE:C(?<a>N).*/${a}-/`, "N-"},
		{`RULE:CN=x.*/\$1 \\ q/`, `$1 \ q`},
		{`RULE:CN.*/a$0b/U`, "ACN=X,O=YB"},
		{`RULE:(?i)cn=X,o=Y/ok/`, "ok"},
	}
	for _, tt := range tests {
		m, err := ParsePrincipalMappingRules(tt.rule)
		if err != nil {
			t.Errorf("%s: %v", tt.rule, err)
			continue
		}
		if got, ok := m.Map(dn); !ok || got != tt.want {
			t.Errorf("%s: Map(%q) = %q, %v; want %q", tt.rule, dn, got, ok, tt.want)
		}
	}
}

func TestPrincipalMappingNoRuleApplies(t *testing.T) {
	// A rule applies only if its pattern matches the whole DN.
	m, err := ParsePrincipalMappingRules(`RULE:O=y/z/,RULE:x*/-/,RULE:[^,]*/<$0>/`)
	if err != nil {
		t.Fatal(err)
	}
	const dn = "CN=x,O=y"
	if got, ok := m.Map(dn); ok {
		t.Errorf("Map(%q) = %q, true; want no rule to apply", dn, got)
	}
	if got := m.Name(dn); got != dn {
		t.Errorf("Name(%q) = %q, want the DN unchanged", dn, got)
	}
}

func TestPrincipalMappingEmptyIsDefault(t *testing.T) {
	for _, rules := range []string{"", "  ", "DEFAULT"} {
		m, err := ParsePrincipalMappingRules(rules)
		if err != nil {
			t.Fatal(err)
		}
		const dn = "CN=alice,O=acme"
		if got, ok := m.Map(dn); !ok || got != dn {
			t.Errorf("rules %q: Map(%q) = %q, %v; want it unchanged", rules, dn, got, ok)
		}
		if got := m.String(); got != "DEFAULT" {
			t.Errorf("rules %q: String() = %q, want DEFAULT", rules, got)
		}
	}
}

// rawName encodes a name whose attribute values have the given ASN.1 string
// tags, which pkix.Name cannot choose.
func rawName(t *testing.T, rdns ...[]dnAttribute) *x509.Certificate {
	t.Helper()
	seq := make([]dnRDNSET, len(rdns))
	for i, r := range rdns {
		seq[i] = r
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return &x509.Certificate{RawSubject: der}
}

func attr(t *testing.T, oid asn1.ObjectIdentifier, tag int, value []byte) dnAttribute {
	t.Helper()
	full, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: tag, Bytes: value})
	if err != nil {
		t.Fatal(err)
	}
	return dnAttribute{Type: oid, Value: asn1.RawValue{FullBytes: full}}
}

// TestSubjectDN compares with Java's X500Principal.getName(); the wanted
// values are what Java 25 prints for the same DER.
func TestSubjectDN(t *testing.T) {
	var (
		cn     = asn1.ObjectIdentifier{2, 5, 4, 3}
		c      = asn1.ObjectIdentifier{2, 5, 4, 6}
		o      = asn1.ObjectIdentifier{2, 5, 4, 10}
		ou     = asn1.ObjectIdentifier{2, 5, 4, 11}
		street = asn1.ObjectIdentifier{2, 5, 4, 9}
		serial = asn1.ObjectIdentifier{2, 5, 4, 5}
		title  = asn1.ObjectIdentifier{2, 5, 4, 12}
		uid    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
		dc     = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
		email  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	)
	const (
		utf8String      = asn1.TagUTF8String
		printableString = asn1.TagPrintableString
		ia5String       = asn1.TagIA5String
	)
	one := func(a dnAttribute) []dnAttribute { return []dnAttribute{a} }
	tests := []struct {
		name string
		cert *x509.Certificate
		want string
	}{
		{"most specific first", rawName(t,
			one(attr(t, c, printableString, []byte("US"))),
			one(attr(t, o, printableString, []byte("acme"))),
			one(attr(t, ou, utf8String, []byte("eng"))),
			one(attr(t, cn, utf8String, []byte("alice")))),
			"CN=alice,OU=eng,O=acme,C=US"},
		{"special characters", rawName(t, one(attr(t, cn, utf8String, []byte(`a,b+c=d<e>f#g;h"i\j`)))),
			`CN=a\,b\+c\=d\<e\>f\#g\;h\"i\\j`},
		{"leading and trailing spaces", rawName(t, one(attr(t, cn, utf8String, []byte(" lead and trail ")))),
			`CN=\ lead and trail\ `},
		{"only spaces", rawName(t, one(attr(t, cn, utf8String, []byte("   ")))), `CN=\ \ \ `},
		{"NUL and carriage return", rawName(t, one(attr(t, cn, utf8String, []byte("nul\x00x\r")))), "CN=nul\\00x\\\r"},
		{"empty value", rawName(t, one(attr(t, cn, utf8String, nil))), "CN="},
		{"multi-valued RDN, DC and UID", rawName(t,
			one(attr(t, dc, ia5String, []byte("com"))),
			one(attr(t, dc, ia5String, []byte("example"))),
			[]dnAttribute{attr(t, cn, utf8String, []byte("x")), attr(t, uid, utf8String, []byte("y"))}),
			"CN=x+UID=y,DC=example,DC=com"},
		{"types without an RFC 2253 keyword", rawName(t,
			one(attr(t, email, ia5String, []byte("a@b.c"))),
			one(attr(t, serial, printableString, []byte("1234"))),
			one(attr(t, street, utf8String, []byte("Main St"))),
			one(attr(t, title, utf8String, []byte("boss")))),
			"2.5.4.12=#0c04626f7373,STREET=Main St,2.5.4.5=#130431323334,1.2.840.113549.1.9.1=#16056140622e63"},
		{"non-ASCII", rawName(t, one(attr(t, cn, utf8String, []byte("Zoë 日本 😀")))), "CN=Zoë 日本 😀"},
		{"BMPString", rawName(t, one(attr(t, cn, asn1.TagBMPString, []byte{0, 'Z', 0, 'o', 0, 0xeb, 0, ' ', 0x65, 0xe5, 0x67, 0x2c}))), "CN=Zoë 日本"},
		{"T61String as Latin-1", rawName(t, one(attr(t, cn, asn1.TagT61String, []byte{'c', 0xe9, 'a'}))), "CN=céa"},
		{"NumericString in hex", rawName(t, one(attr(t, cn, asn1.TagNumericString, []byte("123 45")))), "CN=#1206313233203435"},
		{"empty name", rawName(t), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SubjectDN(tt.cert); got != tt.want {
				t.Errorf("SubjectDN = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSubjectDNOfIssuedCertificate checks the DN of a certificate made from
// a pkix.Name, as tests and operators make them: the order is RFC 2253's,
// most specific first, the reverse of the order Go encodes the name in.
func TestSubjectDNOfIssuedCertificate(t *testing.T) {
	ca := testutil.NewCA(t, "test CA")
	subject := pkix.Name{
		CommonName:         "adminUser",
		OrganizationalUnit: []string{"Admin"},
		Organization:       []string{"Unknown"},
		Locality:           []string{"Unknown"},
		Province:           []string{"Unknown"},
		Country:            []string{"Unknown"},
	}
	certPEM, _ := ca.Issue(t, subject, false)
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	const want = "CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown"
	if got := SubjectDN(cert); got != want {
		t.Errorf("SubjectDN = %q, want %q", got, want)
	}
	m, err := ParsePrincipalMappingRules(kip371Rules)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.PeerPrincipal(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}), "User:adminuser@admin"; got != want {
		t.Errorf("PeerPrincipal = %q, want %q", got, want)
	}
	if got, want := m.PeerPrincipal(tls.ConnectionState{}), "User:ANONYMOUS"; got != want {
		t.Errorf("PeerPrincipal without a certificate = %q, want %q", got, want)
	}
}
