package auth

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want JAASConfig
	}{
		{
			// Kafka's documentation, "Configuring Kafka Brokers" for SASL/PLAIN.
			name: "kafka plain broker example",
			in:   `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
			want: JAASConfig{PlainLoginModule, "required", map[string]string{
				"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret",
			}},
		},
		{
			// Kafka's documentation, client configuration for SASL/SCRAM.
			name: "kafka scram client example",
			in:   `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`,
			want: JAASConfig{ScramLoginModule, "required", map[string]string{"username": "alice", "password": "alice-secret"}},
		},
		{
			name: "multi-line as in a properties file",
			in:   "org.apache.kafka.common.security.plain.PlainLoginModule required \n  username=\"admin\"\n\tpassword=\"admin-secret\";\n",
			want: JAASConfig{PlainLoginModule, "required", map[string]string{"username": "admin", "password": "admin-secret"}},
		},
		{
			name: "escaped quote and backslash",
			in:   `org.apache.kafka.common.security.plain.PlainLoginModule required password="a\"b\\c" other='it\'s "x"';`,
			want: JAASConfig{PlainLoginModule, "required", map[string]string{"password": `a"b\c`, "other": `it's "x"`}},
		},
		{
			name: "unquoted values, flag case, no spaces",
			in:   `org.apache.kafka.common.security.scram.ScramLoginModule Optional username=alice password=alice-secret tokenauth=true;`,
			want: JAASConfig{ScramLoginModule, "optional", map[string]string{"username": "alice", "password": "alice-secret", "tokenauth": "true"}},
		},
		{
			name: "spaces around = and before ;",
			in:   `org.apache.kafka.common.security.plain.PlainLoginModule sufficient username = "a b;c" ;`,
			want: JAASConfig{PlainLoginModule, "sufficient", map[string]string{"username": "a b;c"}},
		},
		{
			name: "comments",
			in:   "/* broker */ org.apache.kafka.common.security.plain.PlainLoginModule requisite // users follow\n user_bob=\"b/*ob*/\"; // end",
			want: JAASConfig{PlainLoginModule, "requisite", map[string]string{"user_bob": "b/*ob*/"}},
		},
		{
			name: "no options, empty value",
			in:   `org.apache.kafka.common.security.plain.PlainLoginModule required password="";`,
			want: JAASConfig{PlainLoginModule, "required", map[string]string{"password": ""}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJAAS(tt.in)
			if err != nil {
				t.Fatalf("ParseJAAS: %v", err)
			}
			if got.LoginModule != tt.want.LoginModule || got.Flag != tt.want.Flag || !maps.Equal(got.Options, tt.want.Options) {
				t.Errorf("got %q %q %q, want %q %q %q", got.LoginModule, got.Flag, got.Options, tt.want.LoginModule, tt.want.Flag, tt.want.Options)
			}
		})
	}
}

func TestParseJAASRejects(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in      string
		wantErr error
		want    string // substring of the error
	}{
		{"JndiLoginModule", `com.sun.security.auth.module.JndiLoginModule required user.provider.url="ldap://attacker/x" useFirstPass=true;`,
			ErrLoginModuleNotAllowed, "com.sun.security.auth.module.JndiLoginModule"},
		{"LdapLoginModule", `com.sun.security.auth.module.LdapLoginModule required userProvider="ldap://x";`,
			ErrLoginModuleNotAllowed, "com.sun.security.auth.module.LdapLoginModule"},
		{"OAuthBearerLoginModule", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
			ErrLoginModuleNotAllowed, "OAuthBearerLoginModule"},
		{"class name prefix", `org.apache.kafka.common.security.plain.PlainLoginModuleX required;`,
			ErrLoginModuleNotAllowed, "PlainLoginModuleX"},
		{"missing semicolon", `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret"`,
			ErrInvalidJAAS, "missing ';'"},
		{"two modules", `org.apache.kafka.common.security.plain.PlainLoginModule required; org.apache.kafka.common.security.scram.ScramLoginModule required;`,
			ErrInvalidJAAS, "only one login module entry"},
		{"empty", "", ErrInvalidJAAS, "want a login module class name"},
		{"only spaces", "  \n ", ErrInvalidJAAS, "want a login module class name"},
		{"no flag", `org.apache.kafka.common.security.plain.PlainLoginModule;`, ErrInvalidJAAS, "want a control flag"},
		{"bad flag", `org.apache.kafka.common.security.plain.PlainLoginModule mandatory;`, ErrInvalidJAAS, "control flag must be"},
		{"missing =", `org.apache.kafka.common.security.plain.PlainLoginModule required username "admin";`, ErrInvalidJAAS, `want '=' after option "username"`},
		{"missing value", `org.apache.kafka.common.security.plain.PlainLoginModule required username=;`, ErrInvalidJAAS, `want a value for option "username"`},
		{"quoted key", `org.apache.kafka.common.security.plain.PlainLoginModule required "username"="admin";`, ErrInvalidJAAS, "want an option name"},
		{"unterminated quote", `org.apache.kafka.common.security.plain.PlainLoginModule required password="secret;`, ErrInvalidJAAS, "unterminated quoted value"},
		{"quote across lines", "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"sec\nret\";", ErrInvalidJAAS, "unterminated quoted value"},
		{"unknown escape", `org.apache.kafka.common.security.plain.PlainLoginModule required password="a\nb";`, ErrInvalidJAAS, "unsupported backslash escape"},
		{"trailing backslash", `org.apache.kafka.common.security.plain.PlainLoginModule required password="ab\`, ErrInvalidJAAS, "unterminated quoted value"},
		{"unterminated comment", `org.apache.kafka.common.security.plain.PlainLoginModule required /* x;`, ErrInvalidJAAS, "unterminated /* comment"},
		{"duplicate option", `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="1" user_a="2";`, ErrInvalidJAAS, `option "user_a" given twice`},
		{"junk value", `org.apache.kafka.common.security.plain.PlainLoginModule required username=a+b;`, ErrInvalidJAAS, "want an option name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJAAS(tt.in)
			if err == nil {
				t.Fatalf("ParseJAAS succeeded: %v", got)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q contains a value", err)
			}
		})
	}
}

func TestJAASAccessors(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_="nobody" users_x="y";`)
	if err != nil {
		t.Fatal(err)
	}
	if got := j.Username(); got != "admin" {
		t.Errorf("Username() = %q, want admin", got)
	}
	if got := j.Password(); got != "admin-secret" {
		t.Errorf("Password() = %q, want admin-secret", got)
	}
	want := PlainUsers{"admin": "admin-secret", "alice": "alice-secret"}
	if got := j.PlainUsers(); !maps.Equal(got, want) {
		t.Errorf("PlainUsers() = %q, want %q", map[string]string(got), map[string]string(want))
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(format, j); strings.Contains(out, "secret") {
			t.Errorf("Sprintf(%q) = %q prints a password", format, out)
		}
	}

	scramCfg, err := ParseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	if got := scramCfg.PlainUsers(); len(got) != 0 {
		t.Errorf("PlainUsers() of a config without user_ options = %v", got)
	}
	if scramCfg.Username() != "alice" || scramCfg.Password() != "alice-secret" {
		t.Errorf("Username/Password = %q/%q", scramCfg.Username(), scramCfg.Password())
	}
}

// The users of a parsed PlainLoginModule configuration authenticate PLAIN
// sessions end to end.
func TestJAASPlainUsersAuthenticate(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	s := NewPlainSession(j.PlainUsers().Check)
	if _, done, err := s.Step(t.Context(), []byte("\x00alice\x00alice-secret")); err != nil || !done {
		t.Fatalf("Step: done %v, err %v", done, err)
	}
}
