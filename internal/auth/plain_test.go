package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl/plain"
)

var plainTestUsers = PlainUsers{"alice": "alice-secret", "admin": "admin-secret"}

func TestPlainLogin(t *testing.T) {
	for _, tt := range []struct {
		name string
		auth plain.Auth
	}{
		{"without authzid", plain.Auth{User: "alice", Pass: "alice-secret"}},
		{"with authzid equal to user", plain.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cs, msg, err := tt.auth.AsMechanism().Authenticate(ctx, "127.0.0.1:9092")
			if err != nil {
				t.Fatal(err)
			}
			s := NewPlainSession(plainTestUsers.Check)
			if s.User() != "" {
				t.Errorf("User() before done = %q", s.User())
			}
			reply, done, err := s.Step(ctx, msg)
			if err != nil || !done {
				t.Fatalf("Step: done %v, err %v", done, err)
			}
			if cdone, _, err := cs.Challenge(reply); err != nil || !cdone {
				t.Fatalf("client Challenge: done %v, err %v", cdone, err)
			}
			if got, want := s.User(), tt.auth.User; got != want {
				t.Errorf("User() = %q, want %q", got, want)
			}
		})
	}
}

func TestPlainRejects(t *testing.T) {
	for _, tt := range []struct {
		name string
		msg  string
		want string // error text after "auth: authentication failed: "
	}{
		{"wrong password", "\x00alice\x00wrong", "invalid credentials"},
		{"unknown user", "\x00mallory\x00alice-secret", "invalid credentials"},
		{"other user's password", "\x00admin\x00alice-secret", "invalid credentials"},
		{"password prefix", "\x00alice\x00alice-secre", "invalid credentials"},
		{"mismatched authzid", "admin\x00alice\x00alice-secret", "authorization id differs from user name"},
		{"mismatched authzid, wrong password", "admin\x00alice\x00wrong", "authorization id differs from user name"},
		{"no NUL", "alice", "malformed PLAIN message: want authzid NUL authcid NUL passwd"},
		{"one NUL", "alice\x00alice-secret", "malformed PLAIN message: want authzid NUL authcid NUL passwd"},
		{"three NULs", "\x00alice\x00alice-secret\x00", "malformed PLAIN message: want authzid NUL authcid NUL passwd"},
		{"empty", "", "malformed PLAIN message: want authzid NUL authcid NUL passwd"},
		{"empty user", "\x00\x00alice-secret", "user name not specified"},
		{"empty password", "\x00alice\x00", "password not specified"},
		{"not UTF-8", "\x00al\xffice\x00alice-secret", "malformed PLAIN message: not UTF-8"},
		{"huge", "\x00alice\x00" + strings.Repeat("x", maxSASLMessageSize), "message too large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewPlainSession(plainTestUsers.Check)
			reply, done, err := s.Step(context.Background(), []byte(tt.msg))
			if err == nil {
				t.Fatalf("Step succeeded, authenticated %q", s.User())
			}
			if done || reply != nil || s.User() != "" {
				t.Errorf("failed Step: done %v, reply %q, User %q", done, reply, s.User())
			}
			if !errors.Is(err, ErrAuthentication) {
				t.Errorf("error %v does not wrap ErrAuthentication", err)
			}
			if got, want := err.Error(), "auth: authentication failed: "+tt.want; got != want {
				t.Errorf("error = %q, want %q", got, want)
			}
			// The right message after a failure must not rescue the session.
			if _, done, err := s.Step(context.Background(), []byte("\x00alice\x00alice-secret")); err == nil || done {
				t.Errorf("Step after a failure: done %v, err %v", done, err)
			}
		})
	}
}

func TestPlainStepAfterDone(t *testing.T) {
	s := NewPlainSession(plainTestUsers.Check)
	ctx := context.Background()
	if _, done, err := s.Step(ctx, []byte("\x00alice\x00alice-secret")); err != nil || !done {
		t.Fatalf("Step: done %v, err %v", done, err)
	}
	_, done, err := s.Step(ctx, []byte("\x00admin\x00admin-secret"))
	if err == nil || done {
		t.Fatalf("second Step: done %v, err %v; want an error", done, err)
	}
	if !errors.Is(err, ErrAuthentication) {
		t.Errorf("error %v does not wrap ErrAuthentication", err)
	}
	if s.User() != "alice" {
		t.Errorf("User() = %q, want alice", s.User())
	}
}

func TestPlainCheckerError(t *testing.T) {
	storeErr := errors.New("store: etcd unavailable at 10.0.0.1")
	s := NewPlainSession(func(context.Context, string, string) (bool, error) { return false, storeErr })
	_, _, err := s.Step(context.Background(), []byte("\x00alice\x00alice-secret"))
	if !errors.Is(err, ErrAuthentication) || !errors.Is(err, storeErr) {
		t.Fatalf("error %v does not wrap ErrAuthentication and the cause", err)
	}
	if strings.Contains(err.Error(), "10.0.0.1") {
		t.Errorf("error text %q reveals the internal cause", err)
	}

	s = NewPlainSession(nil)
	if _, done, err := s.Step(context.Background(), []byte("\x00alice\x00alice-secret")); err == nil || done {
		t.Errorf("nil checker: done %v, err %v", done, err)
	}
}

func TestPlainUsersCheck(t *testing.T) {
	ctx := context.Background()
	users := PlainUsers{"alice": "alice-secret", "empty": ""}
	for _, tt := range []struct {
		user, pass string
		want       bool
	}{
		{"alice", "alice-secret", true},
		{"alice", "alice-secreT", false},
		{"alice", "", false},
		{"mallory", plainDummyPassword, false},
		{"mallory", "", false},
		{"empty", "", true},
	} {
		got, err := users.Check(ctx, tt.user, tt.pass)
		if err != nil || got != tt.want {
			t.Errorf("Check(%q, %q) = %v, %v; want %v", tt.user, tt.pass, got, err, tt.want)
		}
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if out := fmt.Sprintf(format, users); strings.Contains(out, "alice-secret") {
			t.Errorf("Sprintf(%q) = %q prints a password", format, out)
		}
	}
}
