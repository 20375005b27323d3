package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrMappingRules is wrapped by every error about ssl.principal.mapping.rules.
var ErrMappingRules = errors.New("auth: bad ssl.principal.mapping.rules")

// anonymousPrincipal is Kafka's principal of a TLS client that sent no
// certificate.
const anonymousPrincipal = "User:ANONYMOUS"

// PrincipalMapper turns the subject DN of a client certificate into a user
// name, by Kafka's ssl.principal.mapping.rules (KIP-371): a comma-separated
// list of rules, each DEFAULT (the DN unchanged) or
// RULE:pattern/replacement/ with an optional L or U after the last slash
// (the result in lower or upper case). The first rule whose pattern matches
// the whole DN applies; its replacement is applied, as Java's
// String.replaceAll does, to every match of the pattern in the DN. A slash
// inside a pattern or replacement is written \/, and the rules are split on
// the commas between rules only, so patterns may contain commas.
//
// Patterns are Java regular expressions run by Go's regexp (RE2):
// backreferences, lookaround, possessive quantifiers and other Java-only
// syntax are refused when the rules are parsed, as are constructs that RE2
// reads with another meaning (nested character classes such as [a-z[0-9]]
// or [[:alpha:]], class intersections with &&, \1 to \9, \0 with three
// octal digits, \v, the U flag).
// Replacements are Java's: $n and ${name} refer to groups, \ quotes the
// next character, and as in Kafka a $n beyond the pattern's groups is
// literal text.
//
// A PrincipalMapper is immutable and safe for concurrent use.
type PrincipalMapper struct {
	rules []mappingRule
}

// mappingRule is one parsed rule.
type mappingRule struct {
	// isDefault is the DEFAULT rule; the other fields are then unset.
	isDefault bool
	// pattern and replacement are the rule's text (between the slashes).
	pattern, replacement string
	// whole matches the pattern against the whole DN: does the rule apply.
	whole *regexp.Regexp
	// re is the pattern as written: what the replacement replaces.
	re *regexp.Regexp
	// after matches the pattern anchored after one leading character; it
	// finds the empty matches Go's ReplaceAll skips and Java's does not
	// (see apply).
	after *regexp.Regexp
	// parts is the parsed replacement.
	parts []replacementPart
	// lower and upper are the L and U flags.
	lower, upper bool
}

// replacementPart is literal text, or a group of the match when group >= 0.
type replacementPart struct {
	literal string
	group   int
}

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules. The empty
// string means DEFAULT, the setting's default in Kafka (where an explicitly
// empty value would be no rules at all). Empty rules between commas are
// ignored, as in Kafka.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) // Java's String.trim
	if s == "" {
		return &PrincipalMapper{rules: []mappingRule{{isDefault: true}}}, nil
	}
	m := &PrincipalMapper{}
	i := 0
	for {
		i = skipJavaSpace(s, i)
		if i == len(s) {
			break
		}
		if s[i] == ',' { // an empty rule, ignored as Kafka does
			i++
			continue
		}
		start := i
		var r mappingRule
		switch {
		case strings.HasPrefix(s[i:], "DEFAULT"):
			r.isDefault = true
			i += len("DEFAULT")
		case strings.HasPrefix(s[i:], "RULE:"):
			pattern, end, ok := scanRulePart(s, i+len("RULE:"))
			if !ok {
				return nil, badRule(s, start, "want RULE:pattern/replacement/ (a / inside is written \\/)")
			}
			replacement, end, ok := scanRulePart(s, end+1)
			if !ok {
				return nil, badRule(s, start, "want RULE:pattern/replacement/ (a / inside is written \\/)")
			}
			i = end + 1
			lower := i < len(s) && s[i] == 'L'
			upper := i < len(s) && s[i] == 'U'
			if lower || upper {
				i++
			}
			var err error
			if r, err = newMappingRule(pattern, replacement, lower, upper); err != nil {
				return nil, fmt.Errorf("%w: rule %q: %w", ErrMappingRules, s[start:i], err)
			}
		default:
			return nil, badRule(s, start, "want DEFAULT or RULE:pattern/replacement/")
		}
		i = skipJavaSpace(s, i)
		if i < len(s) && s[i] != ',' {
			return nil, badRule(s, start, fmt.Sprintf("unexpected %q after the rule", ruleText(s, i)))
		}
		if i < len(s) {
			i++
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// skipJavaSpace skips the characters of Java's \s.
func skipJavaSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\n\x0b\f\r", s[i]) >= 0 {
		i++
	}
	return i
}

// scanRulePart returns the text from i up to the next unescaped slash, and
// the slash's index. A backslash quotes the character after it (but not a
// line terminator, as Java's . does not match one); the text keeps it.
func scanRulePart(s string, i int) (part string, slash int, ok bool) {
	for j := i; j < len(s); {
		switch s[j] {
		case '/':
			return s[i:j], j, true
		case '\\':
			r, w := utf8.DecodeRuneInString(s[j+1:])
			if w == 0 || r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029' {
				return "", 0, false
			}
			j += 1 + w
		default:
			j++
		}
	}
	return "", 0, false
}

// ruleText is the rule starting at i, up to the next comma: for errors.
func ruleText(s string, i int) string {
	if j := strings.IndexByte(s[i:], ','); j >= 0 {
		return s[i : i+j]
	}
	return s[i:]
}

func badRule(s string, i int, msg string) error {
	return fmt.Errorf("%w: invalid rule %q: %s", ErrMappingRules, ruleText(s, i), msg)
}

func newMappingRule(pattern, replacement string, lower, upper bool) (mappingRule, error) {
	if err := checkJavaPattern(pattern); err != nil {
		return mappingRule{}, err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return mappingRule{}, fmt.Errorf("pattern not supported by Go's regular expressions (RE2: no backreferences, lookaround or possessive quantifiers): %w", err)
	}
	// The pattern compiled alone, so wrapping it in a group cannot change
	// how it parses.
	r := mappingRule{
		pattern:     pattern,
		replacement: replacement,
		re:          re,
		whole:       regexp.MustCompile(`\A(?:` + pattern + `)\z`),
		after:       regexp.MustCompile(`\A(?s:.)(?:` + pattern + `)`),
		lower:       lower,
		upper:       upper,
	}
	if r.parts, err = parseReplacement(replacement, re); err != nil {
		return mappingRule{}, err
	}
	return r, nil
}

// checkJavaPattern refuses the constructs of a Java regular expression that
// Go's regexp would accept with another meaning. Go refuses most other
// Java-only syntax itself.
func checkJavaPattern(p string) error {
	inClass := false // inside [...]
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 >= len(p) {
				return nil // Go reports the trailing backslash
			}
			i++
			switch n := p[i]; {
			case n >= '1' && n <= '9':
				return fmt.Errorf("\\%c is a backreference in Java (Go reads an octal escape or refuses it): not supported", n)
			case n == '0' && i+3 < len(p) && p[i+1] >= '0' && p[i+1] <= '3' && isOctal(p[i+2]) && isOctal(p[i+3]):
				return fmt.Errorf("\\%s is an octal escape of three digits after the 0 in Java, two in Go: write \\x{...}", p[i:i+4])
			case n == 'v':
				return errors.New("\\v is any vertical white space in Java, only \\x0B in Go: not supported")
			case n == 'Q': // quoted up to \E
				end := strings.Index(p[i:], `\E`)
				if end < 0 {
					return nil
				}
				i += end + 1
			}
		case inClass:
			switch {
			case c == '[':
				return errors.New("a [ inside a character class is a nested class in Java ([a-z[0-9]] is a union, [[:alpha:]] is no POSIX class): write the class flat, or escape the [")
			case c == '&' && i+1 < len(p) && p[i+1] == '&':
				return errors.New("&& in a character class is an intersection in Java, literal in Go: not supported")
			case c == ']':
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ] first in the class (after an optional ^) is literal in
			// both Java and Go.
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case c == '(' && strings.HasPrefix(p[i:], "(?"):
			j := i + 2
			for j < len(p) && (p[j] == '-' || p[j] >= 'a' && p[j] <= 'z' || p[j] >= 'A' && p[j] <= 'Z') {
				j++
			}
			if j < len(p) && (p[j] == ':' || p[j] == ')') && strings.ContainsRune(p[i+2:j], 'U') {
				return errors.New("the U flag means Unicode classes in Java, ungreedy in Go: not supported")
			}
		}
	}
	return nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// parseReplacement parses a Java replacement string for re, with Kafka's
// rule that $n beyond the pattern's groups is literal text.
func parseReplacement(s string, re *regexp.Regexp) ([]replacementPart, error) {
	groups := re.NumSubexp()
	var (
		parts   []replacementPart
		literal strings.Builder
	)
	flush := func() {
		if literal.Len() > 0 {
			parts = append(parts, replacementPart{literal: literal.String(), group: -1})
			literal.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 == len(s) {
				return nil, errors.New("replacement ends with a \\ quoting nothing")
			}
			_, w := utf8.DecodeRuneInString(s[i+1:])
			literal.WriteString(s[i+1 : i+1+w])
			i += w
		case '$':
			if i+1 == len(s) {
				return nil, errors.New("replacement ends with a $ naming no group")
			}
			if s[i+1] == '{' {
				end := strings.IndexByte(s[i+2:], '}')
				if end < 0 {
					return nil, errors.New("replacement has ${ without }")
				}
				name := s[i+2 : i+2+end]
				g := re.SubexpIndex(name)
				if name == "" || g < 0 {
					return nil, fmt.Errorf("replacement refers to group %q, which the pattern does not have", name)
				}
				flush()
				parts = append(parts, replacementPart{group: g})
				i += 2 + end
				continue
			}
			d := s[i+1]
			if d < '0' || d > '9' {
				return nil, fmt.Errorf("replacement has $ followed by %q: write \\$ for a literal $", d)
			}
			g := int(d - '0')
			if g > groups {
				if groups == 0 {
					// Kafka passes this to Java, which fails on every
					// mapping: refuse it now.
					return nil, fmt.Errorf("replacement refers to group %d, but the pattern has no groups", g)
				}
				// Kafka makes it literal text.
				literal.WriteByte('$')
				continue
			}
			// Java takes as many digits as still name a group.
			j := i + 2
			for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
				next := g*10 + int(s[j]-'0')
				if next > groups {
					break
				}
				g = next
			}
			flush()
			parts = append(parts, replacementPart{group: g})
			i = j - 1
		default:
			literal.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

// Name is the user name of the client whose certificate has subject DN dn
// (as SubjectDN prints it): the result of the first rule that applies, or
// dn unchanged if none does. Kafka fails such a client's authentication
// instead; Map tells the two cases apart.
func (m *PrincipalMapper) Name(dn string) string {
	if name, ok := m.Map(dn); ok {
		return name
	}
	return dn
}

// Map is the result of the first rule that applies to dn, and false if no
// rule does (a rule list without DEFAULT at its end).
func (m *PrincipalMapper) Map(dn string) (name string, ok bool) {
	for i := range m.rules {
		if name, ok := m.rules[i].apply(dn); ok {
			return name, true
		}
	}
	return "", false
}

// PeerPrincipal is Kafka's principal of the client of a TLS connection:
// "User:" and the mapped subject DN of its certificate, or User:ANONYMOUS
// if it sent none.
func (m *PrincipalMapper) PeerPrincipal(cs tls.ConnectionState) string {
	if len(cs.PeerCertificates) == 0 {
		return anonymousPrincipal
	}
	return "User:" + m.Name(SubjectDN(cs.PeerCertificates[0]))
}

// String is the rules, comma-separated, in the syntax they were parsed from.
func (m *PrincipalMapper) String() string {
	rules := make([]string, len(m.rules))
	for i := range m.rules {
		rules[i] = m.rules[i].String()
	}
	return strings.Join(rules, ",")
}

// String is the rule in the syntax it was parsed from.
func (r *mappingRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.pattern + "/" + r.replacement + "/"
	switch {
	case r.lower:
		s += "L"
	case r.upper:
		s += "U"
	}
	return s
}

// apply is the rule's result for dn, if the rule applies.
func (r *mappingRule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.whole.MatchString(dn) {
		return "", false
	}
	var (
		b    strings.Builder
		last int
	)
	for _, loc := range r.re.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:loc[0]])
		r.expand(&b, dn, loc)
		last = loc[1]
		if loc[1] == loc[0] {
			continue
		}
		// Right after a non-empty match, Java's replaceAll also replaces an
		// empty match ("x".replaceAll("(.*)", "[$1]") is "[x][]"), which Go
		// skips. Anchoring the pattern after the match's last character
		// keeps the context of ^, $ and \b.
		_, w := utf8.DecodeLastRuneInString(dn[:loc[1]])
		base := loc[1] - w
		if e := r.after.FindStringSubmatchIndex(dn[base:]); e != nil && e[1] == w {
			e[0] = w
			for k := range e {
				if e[k] >= 0 {
					e[k] += base
				}
			}
			r.expand(&b, dn, e)
		}
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true
}

// expand writes the replacement for the match loc (submatch indexes).
func (r *mappingRule) expand(b *strings.Builder, s string, loc []int) {
	for _, p := range r.parts {
		if p.group < 0 {
			b.WriteString(p.literal)
			continue
		}
		if start, end := loc[2*p.group], loc[2*p.group+1]; start >= 0 {
			b.WriteString(s[start:end])
		}
	}
}

// SubjectDN is the subject of cert as a distinguished name in RFC 2253
// form, as Java's X500Principal.getName() prints it (and Kafka passes it to
// ssl.principal.mapping.rules): the most specific name first
// ("CN=alice,OU=eng,O=acme,C=US"), the attributes of a multi-valued RDN
// joined by +, the RFC 2253 keywords CN, C, L, ST, O, OU, STREET, DC and
// UID, other attributes as a dotted OID with the value's DER in hex
// ("1.2.840.113549.1.9.1=#1611..."), and the characters , = + < > # ; " \
// escaped with a backslash, as Java does.
func SubjectDN(cert *x509.Certificate) string {
	if dn, err := rfc2253(cert.RawSubject); err == nil {
		return dn
	}
	// Not reached for a certificate x509 parsed; Go's form is close.
	return cert.Subject.String()
}

// dnAttribute is one AttributeTypeAndValue of a name, its value kept raw.
type dnAttribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// dnRDNSET is one relative distinguished name; encoding/asn1 takes a slice
// type named ...SET for a SET OF.
type dnRDNSET []dnAttribute

// rfc2253Keywords are the attribute types Java prints by name in RFC 2253
// form (sun.security.x509.AVAKeyword); all others are printed as OIDs.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

func rfc2253(der []byte) (string, error) {
	var rdns []dnRDNSET
	rest, err := asn1.Unmarshal(der, &rdns)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", errors.New("auth: trailing data after the name")
	}
	var b strings.Builder
	// RFC 2253 prints the sequence backwards: the last RDN is the most
	// specific (the CN, usually).
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, a := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, a)
		}
	}
	return b.String(), nil
}

// writeAttribute writes type=value as Java's AVA.toRFC2253String does.
func writeAttribute(b *strings.Builder, a dnAttribute) {
	oid := a.Type.String()
	keyword, named := rfc2253Keywords[oid]
	if !named {
		keyword = oid
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	value, isString := decodeDirectoryString(a.Value)
	if !named || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	var escaped []rune
	for _, c := range value {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, c):
			escaped = append(escaped, '\\', c)
		case c == 0:
			escaped = append(escaped, '\\', '0', '0')
		default:
			escaped = append(escaped, c)
		}
	}
	// Leading and trailing spaces (and carriage returns) are escaped too.
	lead := 0
	for lead < len(escaped) && (escaped[lead] == ' ' || escaped[lead] == '\r') {
		lead++
	}
	trail := len(escaped) - 1
	for trail >= 0 && (escaped[trail] == ' ' || escaped[trail] == '\r') {
		trail--
	}
	for i, c := range escaped {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
}

// decodeDirectoryString decodes the string types Java prints as text in
// RFC 2253 form; any other value (a NumericString, say) it prints in hex.
func decodeDirectoryString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String:
		return strings.ToValidUTF8(string(v.Bytes), "\uFFFD"), true
	case asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String, asn1.TagGeneralString:
		// Java decodes these as ISO 8859-1.
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}
