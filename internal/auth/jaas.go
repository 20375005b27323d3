package auth

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The login modules ParseJAAS accepts. samsa loads no code: the class name
// only says which options matter.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// ErrLoginModuleNotAllowed is returned by ParseJAAS for any login module other
// than PlainLoginModule and ScramLoginModule. Arbitrary login modules in
// sasl.jaas.config gave remote code execution in Kafka (CVE-2023-25194,
// CVE-2025-27818, CVE-2025-27819), so the list is closed.
var ErrLoginModuleNotAllowed = errors.New("auth: JAAS login module not allowed")

// ErrInvalidJAAS is wrapped by ParseJAAS's syntax errors. They give offsets
// and option names, never option values, which may be passwords.
var ErrInvalidJAAS = errors.New("auth: invalid JAAS configuration")

// JAASConfig is one entry of Kafka's sasl.jaas.config:
//
//	<LoginModuleClass> <required|requisite|sufficient|optional> key="value" key2=value2 ...;
type JAASConfig struct {
	LoginModule string            // PlainLoginModule or ScramLoginModule
	Flag        string            // "required", "requisite", "sufficient" or "optional", lower case
	Options     map[string]string // key=value options, values unquoted and unescaped
}

// ParseJAAS parses a sasl.jaas.config value: exactly one login module entry,
// ended by ';' as Kafka requires. Values are either double- or single-quoted
// (inside quotes, \" \' and \\ stand for the character; any other backslash
// escape is an error rather than a guess) or unquoted words of letters,
// digits and "._-$". Comments (// to end of line, /* ... */) are skipped, as
// Kafka's tokenizer does. The flag is case-insensitive. A repeated option is
// an error.
func ParseJAAS(s string) (JAASConfig, error) {
	p := jaasParser{s: s}
	p.skip()
	if p.err != nil {
		return JAASConfig{}, p.err
	}
	class := p.word()
	if class == "" {
		return JAASConfig{}, p.syntax("want a login module class name")
	}
	if class != PlainLoginModule && class != ScramLoginModule {
		return JAASConfig{}, fmt.Errorf("%w: %s (only %s and %s)", ErrLoginModuleNotAllowed, class, PlainLoginModule, ScramLoginModule)
	}
	p.skip()
	flag := strings.ToLower(p.word())
	switch flag {
	case "required", "requisite", "sufficient", "optional":
	case "":
		return JAASConfig{}, p.syntax("want a control flag after the login module")
	default:
		return JAASConfig{}, p.syntax("control flag must be required, requisite, sufficient or optional")
	}
	cfg := JAASConfig{LoginModule: class, Flag: flag, Options: map[string]string{}}
	for {
		p.skip()
		if p.err != nil {
			return JAASConfig{}, p.err
		}
		if p.pos == len(p.s) {
			return JAASConfig{}, p.syntax("missing ';' at the end of the login module entry")
		}
		if p.s[p.pos] == ';' {
			p.pos++
			break
		}
		key := p.word()
		if key == "" {
			return JAASConfig{}, p.syntax("want an option name")
		}
		p.skip()
		if p.pos == len(p.s) || p.s[p.pos] != '=' {
			return JAASConfig{}, p.syntax(fmt.Sprintf("want '=' after option %q", key))
		}
		p.pos++
		p.skip()
		value, ok := p.value()
		if p.err != nil {
			return JAASConfig{}, p.err
		}
		if !ok {
			return JAASConfig{}, p.syntax(fmt.Sprintf("want a value for option %q", key))
		}
		if _, dup := cfg.Options[key]; dup {
			return JAASConfig{}, p.syntax(fmt.Sprintf("option %q given twice", key))
		}
		cfg.Options[key] = value
	}
	p.skip()
	if p.err != nil {
		return JAASConfig{}, p.err
	}
	if p.pos != len(p.s) {
		return JAASConfig{}, p.syntax("only one login module entry is allowed")
	}
	return cfg, nil
}

// Username is the "username" option: the user a client (or inter-broker
// link) logs in as.
func (j JAASConfig) Username() string { return j.Options["username"] }

// Password is the "password" option.
func (j JAASConfig) Password() string { return j.Options["password"] }

// PlainUsers returns the user_NAME="password" options, keyed by NAME: the
// users a PlainLoginModule broker accepts. It is empty for a configuration
// without such options.
func (j JAASConfig) PlainUsers() PlainUsers {
	users := PlainUsers{}
	for key, value := range j.Options {
		if name, ok := strings.CutPrefix(key, "user_"); ok && name != "" {
			users[name] = value
		}
	}
	return users
}

// String prints the module, flag and option names with values redacted, so
// that logging a configuration never logs a password.
func (j JAASConfig) String() string {
	keys := make([]string, 0, len(j.Options))
	for k := range j.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(j.LoginModule + " " + j.Flag)
	for _, k := range keys {
		b.WriteString(" " + k + "=<redacted>")
	}
	b.WriteString(";")
	return b.String()
}

// GoString is String, for %#v.
func (j JAASConfig) GoString() string { return j.String() }

// jaasParser is a cursor over a sasl.jaas.config value. err is the first
// lexical error (an unterminated comment or quote, a bad escape).
type jaasParser struct {
	s   string
	pos int
	err error
}

func (p *jaasParser) syntax(msg string) error {
	return fmt.Errorf("%w: at offset %d: %s", ErrInvalidJAAS, p.pos, msg)
}

// skip moves past white space and comments.
func (p *jaasParser) skip() {
	for p.pos < len(p.s) && p.err == nil {
		switch rest := p.s[p.pos:]; {
		case rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r' || rest[0] == '\f':
			p.pos++
		case strings.HasPrefix(rest, "//"):
			if i := strings.IndexByte(rest, '\n'); i >= 0 {
				p.pos += i + 1
			} else {
				p.pos = len(p.s)
			}
		case strings.HasPrefix(rest, "/*"):
			i := strings.Index(rest[2:], "*/")
			if i < 0 {
				p.err = p.syntax("unterminated /* comment")
				return
			}
			p.pos += 2 + i + 2
		default:
			return
		}
	}
}

func jaasWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '$'
}

// word reads an unquoted word, "" if there is none at the cursor.
func (p *jaasParser) word() string {
	start := p.pos
	for p.pos < len(p.s) && jaasWordByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// value reads a quoted string or a word; ok is false if there is neither.
func (p *jaasParser) value() (v string, ok bool) {
	if p.pos == len(p.s) {
		return "", false
	}
	quote := p.s[p.pos]
	if quote != '"' && quote != '\'' {
		w := p.word()
		return w, w != ""
	}
	start := p.pos
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == quote:
			p.pos++
			return b.String(), true
		case c == '\n' || c == '\r':
			// Kafka's tokenizer ends a quoted string at a line end;
			// a value spanning lines is a mistake either way.
			p.pos = start
			p.err = p.syntax("unterminated quoted value")
			return "", false
		case c == '\\':
			if p.pos+1 == len(p.s) {
				p.pos = start
				p.err = p.syntax("unterminated quoted value")
				return "", false
			}
			switch e := p.s[p.pos+1]; e {
			case '"', '\'', '\\':
				b.WriteByte(e)
				p.pos += 2
			default:
				p.err = p.syntax("unsupported backslash escape in quoted value (only \\\" \\' \\\\)")
				return "", false
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	p.pos = start
	p.err = p.syntax("unterminated quoted value")
	return "", false
}
