package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// FuzzScramServer feeds an arbitrary client-first and then an arbitrary
// client-final message to a SCRAM server. It must never panic, every error
// must wrap ErrAuthentication, and nothing can authenticate: the server nonce
// is random, so no fuzzed client-final can carry it.
func FuzzScramServer(f *testing.F) {
	ctx := context.Background()
	for _, mech := range scramTestMechanisms {
		client := scramTestClient(mech, scram.Auth{User: "alice", Pass: "alice-secret"})
		cs, first, err := client.Authenticate(ctx, "")
		if err != nil {
			f.Fatal(err)
		}
		s, err := NewScramSession(mech, scramTestLookup(f, map[string]string{"alice": "alice-secret"}))
		if err != nil {
			f.Fatal(err)
		}
		serverFirst, _, err := s.Step(ctx, first)
		if err != nil {
			f.Fatal(err)
		}
		_, final, err := cs.Challenge(serverFirst)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(first, final)
	}
	f.Add([]byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("y,a=alice,n=alice,r=abc,ext=1"), []byte("c=eSxhPWFsaWNlLA==,r=abc,e=1,p="))
	f.Add([]byte("p=tls-unique,,n=alice,r=abc"), []byte(""))
	f.Add([]byte("n,,m=x,n==3D=2C,r=\x7f"), []byte(",p=,p="))
	f.Add([]byte("n,,n=mallory,r=abc,tokenauth=true"), []byte("c=biws"))

	lookup := scramTestLookup(f, map[string]string{"alice": "alice-secret", "a,b=": "x"})
	f.Fuzz(func(t *testing.T, first, final []byte) {
		for _, mech := range scramTestMechanisms {
			s, err := NewScramSession(mech, lookup)
			if err != nil {
				t.Fatal(err)
			}
			_, done, err := s.Step(ctx, first)
			if done {
				t.Fatalf("client-first %q authenticated", first)
			}
			if err != nil {
				if !errors.Is(err, ErrAuthentication) {
					t.Fatalf("client-first error %v does not wrap ErrAuthentication", err)
				}
				if _, _, err := s.Step(ctx, final); err == nil {
					t.Fatal("Step after a failure succeeded")
				}
				continue
			}
			_, done, err = s.Step(ctx, final)
			if err == nil || done {
				t.Fatalf("client-final %q after %q: done %v, err %v; want a failure", final, first, done, err)
			}
			if !errors.Is(err, ErrAuthentication) {
				t.Fatalf("client-final error %v does not wrap ErrAuthentication", err)
			}
			if s.User() != "" {
				t.Fatalf("User() = %q after a failure", s.User())
			}
		}
	})
}

// FuzzPlainSession: arbitrary PLAIN messages never panic, and authenticate
// only with alice's exact password.
func FuzzPlainSession(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("alice\x00alice\x00alice-secret"))
	f.Add([]byte("bob\x00alice\x00alice-secret"))
	f.Add([]byte("\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := NewPlainSession(PlainUsers{"alice": "alice-secret"}.Check)
		_, done, err := s.Step(context.Background(), msg)
		if err != nil && !errors.Is(err, ErrAuthentication) {
			t.Fatalf("error %v does not wrap ErrAuthentication", err)
		}
		ok := string(msg) == "\x00alice\x00alice-secret" || string(msg) == "alice\x00alice\x00alice-secret"
		if done != ok || (err == nil) != ok {
			t.Fatalf("Step(%q) = done %v, err %v", msg, done, err)
		}
	})
}

// FuzzParseJAAS: arbitrary input never panics, and whatever parses names an
// allowed login module.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`)
	f.Add(`org.apache.kafka.common.security.scram.ScramLoginModule required username=alice password='a\'b';`)
	f.Add(`com.sun.security.auth.module.JndiLoginModule required;`)
	f.Add("/* x */ org.apache.kafka.common.security.plain.PlainLoginModule optional // y\n;")
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJAAS(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidJAAS) && !errors.Is(err, ErrLoginModuleNotAllowed) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if j.LoginModule != PlainLoginModule && j.LoginModule != ScramLoginModule {
			t.Fatalf("accepted login module %q", j.LoginModule)
		}
		_ = j.PlainUsers()
	})
}
