package auth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"encoding/base64"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

var scramTestMechanisms = []string{MechanismScramSHA256, MechanismScramSHA512}

// scramTestLookup is a ScramLookup over credentials derived from passwords.
func scramTestLookup(t testing.TB, users map[string]string) ScramLookup {
	t.Helper()
	creds := map[string]ScramCredential{}
	for _, mech := range scramTestMechanisms {
		for user, pass := range users {
			c, err := NewScramCredential(mech, pass, nil, ScramMinIterations)
			if err != nil {
				t.Fatalf("NewScramCredential(%s, %s): %v", mech, user, err)
			}
			creds[mech+"\x00"+user] = c
		}
	}
	return func(_ context.Context, mechanism, user string) (ScramCredential, bool, error) {
		c, ok := creds[mechanism+"\x00"+user]
		return c, ok, nil
	}
}

func scramTestClient(mech string, a scram.Auth) sasl.Mechanism {
	if mech == MechanismScramSHA512 {
		return a.AsSha512Mechanism()
	}
	return a.AsSha256Mechanism()
}

func scramTestSession(t *testing.T, mech string, lookup ScramLookup) Session {
	t.Helper()
	s, err := NewScramSession(mech, lookup)
	if err != nil {
		t.Fatalf("NewScramSession(%q): %v", mech, err)
	}
	return s
}

// scramExchange runs a whole exchange between a franz-go client and server s.
// tamper, if not nil, rewrites the client-final message before the server
// sees it. It returns the server's error, or the client's if the server
// accepted.
func scramExchange(t *testing.T, client sasl.Mechanism, s Session, tamper func(string) string) error {
	t.Helper()
	ctx := context.Background()
	cs, first, err := client.Authenticate(ctx, "127.0.0.1:9092")
	if err != nil {
		t.Fatalf("client Authenticate: %v", err)
	}
	serverFirst, done, err := s.Step(ctx, first)
	if err != nil {
		return err
	}
	if done {
		t.Fatal("server done after client-first")
	}
	cdone, final, err := cs.Challenge(serverFirst)
	if err != nil {
		t.Fatalf("client rejected server-first %q: %v", serverFirst, err)
	}
	if cdone {
		t.Fatal("client done after server-first")
	}
	if tamper != nil {
		final = []byte(tamper(string(final)))
	}
	serverFinal, done, err := s.Step(ctx, final)
	if err != nil {
		if done {
			t.Error("Step returned done with an error")
		}
		if s.User() != "" {
			t.Errorf("User() = %q after a failure, want \"\"", s.User())
		}
		return err
	}
	if !done {
		t.Fatal("server not done after a successful client-final")
	}
	cdone, _, err = cs.Challenge(serverFinal)
	if err != nil {
		return err
	}
	if !cdone {
		t.Fatal("client not done after server-final")
	}
	return nil
}

func scramWantInvalidCredentials(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("authentication succeeded, want failure")
	}
	if !errors.Is(err, ErrAuthentication) {
		t.Errorf("error %v does not wrap ErrAuthentication", err)
	}
	if got, want := err.Error(), "auth: authentication failed: invalid credentials"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

func TestScramLogin(t *testing.T) {
	users := map[string]string{"alice": "alice-secret", "we,i=rd": "p@ss,=word"}
	lookup := scramTestLookup(t, users)
	for _, mech := range scramTestMechanisms {
		for _, tt := range []struct {
			name string
			auth scram.Auth
		}{
			{"plain user", scram.Auth{User: "alice", Pass: "alice-secret"}},
			{"escaped user", scram.Auth{User: "we,i=rd", Pass: "p@ss,=word"}},
			{"authzid equal to user", scram.Auth{Zid: "alice", User: "alice", Pass: "alice-secret"}},
		} {
			t.Run(mech+"/"+tt.name, func(t *testing.T) {
				s := scramTestSession(t, mech, lookup)
				if got := s.User(); got != "" {
					t.Errorf("User() before done = %q, want \"\"", got)
				}
				if err := scramExchange(t, scramTestClient(mech, tt.auth), s, nil); err != nil {
					t.Fatalf("exchange: %v", err)
				}
				if got, want := s.User(), tt.auth.User; got != want {
					t.Errorf("User() = %q, want %q", got, want)
				}
			})
		}
	}
}

func TestScramWrongPassword(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	for _, mech := range scramTestMechanisms {
		t.Run(mech, func(t *testing.T) {
			s := scramTestSession(t, mech, lookup)
			err := scramExchange(t, scramTestClient(mech, scram.Auth{User: "alice", Pass: "wrong"}), s, nil)
			scramWantInvalidCredentials(t, err)
		})
	}
}

// A wrong password for the other mechanism's credential must not work: the
// lookup is per mechanism.
func TestScramCredentialPerMechanism(t *testing.T) {
	c256, err := NewScramCredential(MechanismScramSHA256, "secret", nil, ScramMinIterations)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(_ context.Context, mechanism, user string) (ScramCredential, bool, error) {
		return c256, mechanism == MechanismScramSHA256 && user == "alice", nil
	}
	s := scramTestSession(t, MechanismScramSHA512, lookup)
	err = scramExchange(t, scramTestClient(MechanismScramSHA512, scram.Auth{User: "alice", Pass: "secret"}), s, nil)
	scramWantInvalidCredentials(t, err)
}

var scramServerFirstRE = regexp.MustCompile(`^r=([!-+\--~]+),s=([A-Za-z0-9+/=]+),i=([0-9]+)$`)

func scramServerFirstOf(t *testing.T, mech, user string, lookup ScramLookup) (nonce, salt, iters string) {
	t.Helper()
	s := scramTestSession(t, mech, lookup)
	clientNonce := "fyko+d2lbbFgONRv9qkxdawL"
	reply, done, err := s.Step(context.Background(), []byte("n,,n="+user+",r="+clientNonce))
	if err != nil || done {
		t.Fatalf("client-first for %q: done %v, err %v", user, done, err)
	}
	m := scramServerFirstRE.FindStringSubmatch(string(reply))
	if m == nil {
		t.Fatalf("server-first %q does not have the shape r=...,s=...,i=...", reply)
	}
	if !strings.HasPrefix(m[1], clientNonce) || len(m[1])-len(clientNonce) < 24 {
		t.Errorf("nonce %q does not extend the client nonce %q by at least 24 characters", m[1], clientNonce)
	}
	return m[1], m[2], m[3]
}

func TestScramUnknownUser(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	for _, mech := range scramTestMechanisms {
		t.Run(mech, func(t *testing.T) {
			_, realSalt, realIters := scramServerFirstOf(t, mech, "alice", lookup)
			nonce1, salt1, iters1 := scramServerFirstOf(t, mech, "mallory", lookup)
			nonce2, salt2, _ := scramServerFirstOf(t, mech, "mallory", lookup)
			_, saltOther, _ := scramServerFirstOf(t, mech, "trent", lookup)

			if len(salt1) != len(realSalt) {
				t.Errorf("unknown user's salt %q has length %d, a real one %d", salt1, len(salt1), len(realSalt))
			}
			if iters1 != realIters {
				t.Errorf("unknown user's iterations %s, a real user's %s", iters1, realIters)
			}
			if salt1 != salt2 {
				t.Errorf("unknown user's salt changed between sessions: %q then %q", salt1, salt2)
			}
			if salt1 == saltOther {
				t.Errorf("two unknown users got the same salt %q", salt1)
			}
			if nonce1 == nonce2 {
				t.Errorf("two sessions got the same nonce %q", nonce1)
			}

			s := scramTestSession(t, mech, lookup)
			err := scramExchange(t, scramTestClient(mech, scram.Auth{User: "mallory", Pass: "alice-secret"}), s, nil)
			scramWantInvalidCredentials(t, err)
		})
	}
}

func TestScramTamperedClientFinal(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	replaceAttr := func(key string, value func(string) string) func(string) string {
		return func(msg string) string {
			attrs := strings.Split(msg, ",")
			for i, a := range attrs {
				if strings.HasPrefix(a, key+"=") {
					attrs[i] = key + "=" + value(a[len(key)+1:])
				}
			}
			return strings.Join(attrs, ",")
		}
	}
	flipProof := func(p string) string {
		b, err := base64.StdEncoding.DecodeString(p)
		if err != nil {
			panic(err)
		}
		b[len(b)/2] ^= 1
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, mech := range scramTestMechanisms {
		for _, tt := range []struct {
			name   string
			tamper func(string) string
			want   string // error text, after "auth: authentication failed: "
		}{
			{"proof bit flipped", replaceAttr("p", flipProof), "invalid credentials"},
			{"proof truncated", replaceAttr("p", func(p string) string { return p[:8] }), "malformed SCRAM client-final message: proof has the wrong length"},
			{"proof not base64", replaceAttr("p", func(p string) string { return "!" + p[1:] }), "malformed SCRAM client-final message: proof is not base64"},
			{"nonce extended", replaceAttr("r", func(r string) string { return r + "x" }), "SCRAM nonce does not match"},
			{"nonce shortened", replaceAttr("r", func(r string) string { return r[:len(r)-1] }), "SCRAM nonce does not match"},
			{"client nonce only", replaceAttr("r", func(r string) string { return r[:10] }), "SCRAM nonce does not match"},
			{"channel binding for y", replaceAttr("c", func(string) string { return base64.StdEncoding.EncodeToString([]byte("y,,")) }), "SCRAM channel binding does not match the GS2 header"},
			{"channel binding not base64", replaceAttr("c", func(string) string { return "b*ws" }), "malformed SCRAM client-final message: channel binding is not base64"},
			{"no proof", func(m string) string { return m[:strings.LastIndex(m, ",p=")] }, "malformed SCRAM client-final message: no proof"},
			{"attribute after proof", func(m string) string { return m + ",x=1" }, "malformed SCRAM client-final message: proof is not base64"},
			{"nonce before channel binding", func(m string) string {
				a := strings.Split(m, ",")
				a[0], a[1] = a[1], a[0]
				return strings.Join(a, ",")
			}, "malformed SCRAM client-final message: want c= first"},
			{"extension changes the AuthMessage", func(m string) string {
				i := strings.LastIndex(m, ",p=")
				return m[:i] + ",foo=bar" + m[i:]
			}, "invalid credentials"},
		} {
			t.Run(mech+"/"+tt.name, func(t *testing.T) {
				s := scramTestSession(t, mech, lookup)
				err := scramExchange(t, scramTestClient(mech, scram.Auth{User: "alice", Pass: "alice-secret"}), s, tt.tamper)
				if err == nil {
					t.Fatal("tampered exchange succeeded")
				}
				if !errors.Is(err, ErrAuthentication) {
					t.Errorf("error %v does not wrap ErrAuthentication", err)
				}
				if got, want := err.Error(), "auth: authentication failed: "+tt.want; got != want {
					t.Errorf("error = %q, want %q", got, want)
				}
			})
		}
	}
}

func TestScramClientFirstRejects(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret", "a,b": "x"})
	for _, tt := range []struct {
		name string
		msg  string
		want string // substring of the error
	}{
		{"empty", "", "empty SCRAM message"},
		{"huge", "n,,n=alice,r=" + strings.Repeat("a", maxSASLMessageSize), "message too large"},
		{"channel binding p=", "p=tls-unique,,n=alice,r=abc", "channel binding is not supported"},
		{"bad cbind flag", "x,,n=alice,r=abc", "bad GS2 channel-binding flag"},
		{"no gs2 header", "n=alice,r=abc", "bad GS2 channel-binding flag"},
		{"incomplete gs2 header", "n,", "incomplete GS2 header"},
		{"bad authzid", "n,z=alice,n=alice,r=abc", "bad authorization id"},
		{"authzid other user", "n,a=bob,n=alice,r=abc", "authorization id differs from user name"},
		{"authzid empty", "n,a=,n=alice,r=abc", "empty user name"},
		{"bad saslname escape", "n,,n=a=2Cb=41,r=abc", "bad '=' escape"},
		{"saslname trailing =", "n,,n=alice=,r=abc", "bad '=' escape"},
		{"saslname lower-case escape", "n,,n=a=2cb,r=abc", "bad '=' escape"},
		{"NUL in user", "n,,n=al\x00ice,r=abc", "NUL in user name"},
		{"not UTF-8", "n,,n=al\xffice,r=abc", "not UTF-8"},
		{"empty user", "n,,n=,r=abc", "empty user name"},
		{"mandatory extension", "n,,m=ext,n=alice,r=abc", "mandatory extension (m=) is not supported"},
		{"missing nonce", "n,,n=alice", "want n= and r="},
		{"missing user", "n,,r=abc", "want n= and r="},
		{"wrong order", "n,,r=abc,n=alice", "want n= first"},
		{"nonce attribute wrong", "n,,n=alice,s=abc", "want r= after n="},
		{"empty nonce", "n,,n=alice,r=", "nonce empty or not printable"},
		{"nonce with space", "n,,n=alice,r=ab c", "nonce empty or not printable"},
		{"nonce with control", "n,,n=alice,r=ab\x01c", "nonce empty or not printable"},
		{"nonce not ASCII", "n,,n=alice,r=abcé", "nonce empty or not printable"},
		{"tokenauth extension", "n,,n=alice,r=abc,tokenauth=true", "delegation token authentication (tokenauth) is not supported"},
		{"repeated nonce", "n,,n=alice,r=abc,r=def", "attribute r= out of place"},
		{"empty extension", "n,,n=alice,r=abc,", "bad attribute"},
		{"extension without value", "n,,n=alice,r=abc,foo", "bad attribute"},
		{"extension bad key", "n,,n=alice,r=abc,f-o=1", "bad attribute"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := scramTestSession(t, MechanismScramSHA256, lookup)
			reply, done, err := s.Step(context.Background(), []byte(tt.msg))
			if err == nil {
				t.Fatalf("Step(%q) = %q, want an error", tt.msg, reply)
			}
			if done || reply != nil {
				t.Errorf("failed Step returned done %v, reply %q", done, reply)
			}
			if !errors.Is(err, ErrAuthentication) {
				t.Errorf("error %v does not wrap ErrAuthentication", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
			if _, _, err := s.Step(context.Background(), []byte("c=biws,r=abc,p=AAAA")); err == nil {
				t.Error("Step after a failure succeeded")
			}
		})
	}
}

// An authzid and user name are compared after saslname decoding, and other
// extensions than tokenauth are ignored, as Kafka does.
func TestScramClientFirstAccepts(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"a,b": "x"})
	for _, msg := range []string{
		"n,a=a=2Cb,n=a=2Cb,r=abc",
		"y,,n=a=2Cb,r=abc",
		"n,,n=a=2Cb,r=abc,foo=bar,Baz=1",
	} {
		s := scramTestSession(t, MechanismScramSHA256, lookup)
		if _, _, err := s.Step(context.Background(), []byte(msg)); err != nil {
			t.Errorf("Step(%q): %v", msg, err)
		}
	}
}

// scramTestClientFinal is a client independent of the server code: it computes
// the client-final message and the expected server signature for a
// client-first bare message and the server's reply.
func scramTestClientFinal(t *testing.T, mech, pass, gs2Header, clientFirstBare, serverFirst string) (final, wantServerFinal string) {
	t.Helper()
	return scramTestClientFinalNonce(t, mech, pass, gs2Header, clientFirstBare, serverFirst, func(n string) string { return n })
}

// scramTestClientFinalNonce is scramTestClientFinal sending nonce(the
// combined nonce) as r=, with a proof over what it sends.
func scramTestClientFinalNonce(t *testing.T, mech, pass, gs2Header, clientFirstBare, serverFirst string, nonce func(string) string) (final, wantServerFinal string) {
	t.Helper()
	h, _ := scramHashFor(mech)
	m := scramServerFirstRE.FindStringSubmatch(serverFirst)
	if m == nil {
		t.Fatalf("bad server-first %q", serverFirst)
	}
	salt, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil {
		t.Fatal(err)
	}
	iters := 0
	for _, c := range m[3] {
		iters = iters*10 + int(c-'0')
	}
	salted, err := pbkdf2.Key(h.newHash, pass, salt, iters, h.size)
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, s string) []byte {
		x := hmac.New(h.newHash, key)
		x.Write([]byte(s))
		return x.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	d := h.newHash()
	d.Write(clientKey)
	storedKey := d.Sum(nil)
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(gs2Header)) + ",r=" + nonce(m[1])
	authMessage := clientFirstBare + "," + serverFirst + "," + withoutProof
	proof := mac(storedKey, authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	serverSig := mac(mac(salted, "Server Key"), authMessage)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof),
		"v=" + base64.StdEncoding.EncodeToString(serverSig)
}

// franz-go always sends "n,,"; a client that supports channel binding but sees
// no -PLUS mechanism sends "y,," and must echo it in c=.
func TestScramGS2FlagY(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	for _, mech := range scramTestMechanisms {
		t.Run(mech, func(t *testing.T) {
			ctx := context.Background()
			s := scramTestSession(t, mech, lookup)
			bare := "n=alice,r=clientnonce"
			serverFirst, _, err := s.Step(ctx, []byte("y,,"+bare))
			if err != nil {
				t.Fatal(err)
			}
			final, wantServerFinal := scramTestClientFinal(t, mech, "alice-secret", "y,,", bare, string(serverFirst))
			serverFinal, done, err := s.Step(ctx, []byte(final))
			if err != nil || !done {
				t.Fatalf("client-final: done %v, err %v", done, err)
			}
			if string(serverFinal) != wantServerFinal {
				t.Errorf("server-final = %q, want %q", serverFinal, wantServerFinal)
			}
		})
	}
}

// RFC 7677 section 3's SCRAM-SHA-256 example, with the server nonce fixed.
func TestScramRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := NewScramCredential(MechanismScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(_ context.Context, mechanism, user string) (ScramCredential, bool, error) {
		return cred, user == "user", nil
	}
	s, err := newScramSession(MechanismScramSHA256, lookup, func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, step := range []struct{ client, server string }{
		{"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
			"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"},
		{"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="},
	} {
		got, _, err := s.Step(ctx, []byte(step.client))
		if err != nil {
			t.Fatalf("Step(%q): %v", step.client, err)
		}
		if string(got) != step.server {
			t.Errorf("Step(%q) = %q, want %q", step.client, got, step.server)
		}
	}
	if s.User() != "user" {
		t.Errorf("User() = %q, want \"user\"", s.User())
	}
}

// A client-final captured from one exchange does not authenticate on another
// session: the server nonce differs.
func TestScramReplay(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	for _, mech := range scramTestMechanisms {
		t.Run(mech, func(t *testing.T) {
			ctx := context.Background()
			var first, final []byte
			client := scramTestClient(mech, scram.Auth{User: "alice", Pass: "alice-secret"})
			err := scramExchange(t, &scramRecorder{client, &first}, scramTestSession(t, mech, lookup), func(m string) string {
				final = []byte(m)
				return m
			})
			if err != nil {
				t.Fatalf("original exchange: %v", err)
			}
			s := scramTestSession(t, mech, lookup)
			if _, _, err := s.Step(ctx, first); err != nil {
				t.Fatalf("replayed client-first: %v", err)
			}
			_, done, err := s.Step(ctx, final)
			if err == nil || done {
				t.Fatalf("replayed client-final: done %v, err %v; want a failure", done, err)
			}
			if !errors.Is(err, ErrAuthentication) {
				t.Errorf("error %v does not wrap ErrAuthentication", err)
			}
			if s.User() != "" {
				t.Errorf("User() = %q after a failed replay", s.User())
			}
		})
	}
}

// scramRecorder records the client-first message of a mechanism.
type scramRecorder struct {
	sasl.Mechanism
	first *[]byte
}

func (r *scramRecorder) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s, first, err := r.Mechanism.Authenticate(ctx, host)
	*r.first = bytes.Clone(first)
	return s, first, err
}

func TestScramStepAfterDone(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	s := scramTestSession(t, MechanismScramSHA256, lookup)
	if err := scramExchange(t, scramTestClient(MechanismScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"}), s, nil); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"n,,n=alice,r=abc", "c=biws,r=abc,p=AAAA", ""} {
		reply, done, err := s.Step(context.Background(), []byte(msg))
		if err == nil || done || reply != nil {
			t.Errorf("Step(%q) after done = %q, %v, %v; want an error", msg, reply, done, err)
		} else if !errors.Is(err, ErrAuthentication) {
			t.Errorf("error %v does not wrap ErrAuthentication", err)
		}
	}
	if s.User() != "alice" {
		t.Errorf("User() = %q after extra Steps, want alice", s.User())
	}
}

func TestScramStepAfterError(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	ctx := context.Background()
	client := scramTestClient(MechanismScramSHA256, scram.Auth{User: "alice", Pass: "alice-secret"})
	cs, first, err := client.Authenticate(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	s := scramTestSession(t, MechanismScramSHA256, lookup)
	serverFirst, _, err := s.Step(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	_, final, err := cs.Challenge(serverFirst)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Step(ctx, []byte("garbage")); err == nil {
		t.Fatal("garbage client-final accepted")
	}
	// The right client-final after a failure must not rescue the session.
	if _, done, err := s.Step(ctx, final); err == nil || done {
		t.Fatalf("Step after a failure: done %v, err %v; want an error", done, err)
	}
	if s.User() != "" {
		t.Errorf("User() = %q", s.User())
	}
}

func TestScramLookupFailures(t *testing.T) {
	good, err := NewScramCredential(MechanismScramSHA256, "secret", nil, ScramMinIterations)
	if err != nil {
		t.Fatal(err)
	}
	storeErr := errors.New("store: etcd unavailable")
	short := good
	short.StoredKey = short.StoredKey[:10]
	lowIters := good
	lowIters.Iterations = 1
	for _, tt := range []struct {
		name   string
		lookup ScramLookup
		cause  error
	}{
		{"store error", func(context.Context, string, string) (ScramCredential, bool, error) {
			return ScramCredential{}, false, storeErr
		}, storeErr},
		{"short key", func(context.Context, string, string) (ScramCredential, bool, error) { return short, true, nil }, nil},
		{"low iterations", func(context.Context, string, string) (ScramCredential, bool, error) { return lowIters, true, nil }, nil},
		{"wrong mechanism", func(context.Context, string, string) (ScramCredential, bool, error) {
			c := good
			c.Mechanism = MechanismScramSHA512
			return c, true, nil
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := scramTestSession(t, MechanismScramSHA256, tt.lookup)
			_, _, err := s.Step(context.Background(), []byte("n,,n=alice,r=abc"))
			if err == nil {
				t.Fatal("Step succeeded")
			}
			if got, want := err.Error(), "auth: authentication failed: credentials could not be verified"; got != want {
				t.Errorf("error = %q, want %q", got, want)
			}
			var se *SASLError
			if !errors.As(err, &se) || se.Err == nil {
				t.Errorf("error %v carries no cause", err)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("error %v does not wrap %v", err, tt.cause)
			}
		})
	}
}

func TestNewScramSession(t *testing.T) {
	lookup := scramTestLookup(t, nil)
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-1", "scram-sha-256", ""} {
		if _, err := NewScramSession(mech, lookup); !errors.Is(err, ErrUnknownMechanism) {
			t.Errorf("NewScramSession(%q) error = %v, want ErrUnknownMechanism", mech, err)
		}
	}
	if _, err := NewScramSession(MechanismScramSHA256, nil); err == nil {
		t.Error("NewScramSession with a nil lookup succeeded")
	}
}

func TestNewScramCredential(t *testing.T) {
	for _, tt := range []struct {
		name       string
		mech, pass string
		salt       []byte
		iters      int
		wantErr    bool
	}{
		{"sha256 min", MechanismScramSHA256, "p", nil, 4096, false},
		{"sha512 max", MechanismScramSHA512, "p", []byte("salt"), 16384, false},
		{"too few iterations", MechanismScramSHA256, "p", nil, 4095, true},
		{"too many iterations", MechanismScramSHA256, "p", nil, 16385, true},
		{"unknown mechanism", "SCRAM-SHA-1", "p", nil, 4096, true},
		{"empty salt", MechanismScramSHA256, "p", []byte{}, 4096, true},
		{"empty password", MechanismScramSHA256, "", nil, 4096, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewScramCredential(tt.mech, tt.pass, tt.salt, tt.iters)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			h, _ := scramHashFor(tt.mech)
			if err := c.check(h); err != nil {
				t.Errorf("credential does not check: %v", err)
			}
			if tt.salt == nil && len(c.Salt) != 32 {
				t.Errorf("generated salt has %d bytes, want 32", len(c.Salt))
			}
			if tt.salt != nil && !bytes.Equal(c.Salt, tt.salt) {
				t.Errorf("salt = %x, want %x", c.Salt, tt.salt)
			}
		})
	}
	a, _ := NewScramCredential(MechanismScramSHA256, "p", nil, 4096)
	b, _ := NewScramCredential(MechanismScramSHA256, "p", nil, 4096)
	if bytes.Equal(a.Salt, b.Salt) {
		t.Error("two generated salts are equal")
	}
	// The caller's salt is copied, not aliased.
	salt := []byte("salt")
	c, _ := NewScramCredential(MechanismScramSHA256, "p", salt, 4096)
	salt[0] = 'X'
	if string(c.Salt) != "salt" {
		t.Errorf("credential salt changed with the caller's slice: %q", c.Salt)
	}
}

// AlterUserScramCredentials takes any non-empty salted password, as Kafka
// does (kafka-go's tests send 18 bytes); empty ones are refused.
func TestScramCredentialFromSaltedLengths(t *testing.T) {
	salt := []byte("0123456789abcdef")
	if _, err := ScramCredentialFromSalted(MechanismScramSHA256, salt, []byte("my-salted-password"), 4096); err != nil {
		t.Errorf("18-byte salted password: %v", err)
	}
	if _, err := ScramCredentialFromSalted(MechanismScramSHA512, salt, nil, 4096); err == nil {
		t.Error("empty salted password accepted")
	}
	if _, err := ScramCredentialFromSalted(MechanismScramSHA512, nil, []byte("x"), 4096); err == nil {
		t.Error("empty salt accepted")
	}
}

// librdkafka before 2.6.1 sends the client nonce twice in client-final
// (confluentinc/librdkafka#4895), which Kafka 3.x accepted: that form logs
// in, with a proof over the message as sent; any other prefix does not.
func TestScramDoubledClientNonce(t *testing.T) {
	lookup := scramTestLookup(t, map[string]string{"alice": "alice-secret"})
	for _, c := range []struct {
		name   string
		prefix string
		ok     bool
	}{{"client nonce twice", "clientnonce", true}, {"another prefix", "othernonce1", false}, {"half the client nonce", "client", false}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s := scramTestSession(t, MechanismScramSHA512, lookup)
			bare := "n=alice,r=clientnonce"
			serverFirst, _, err := s.Step(ctx, []byte("n,,"+bare))
			if err != nil {
				t.Fatal(err)
			}
			final, wantServerFinal := scramTestClientFinalNonce(t, MechanismScramSHA512, "alice-secret", "n,,", bare, string(serverFirst),
				func(n string) string { return c.prefix + n })
			serverFinal, done, err := s.Step(ctx, []byte(final))
			if c.ok {
				if err != nil || !done || string(serverFinal) != wantServerFinal {
					t.Fatalf("client-final: %q, done %v, err %v", serverFinal, done, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "nonce does not match") {
				t.Fatalf("client-final with nonce prefix %q: err %v", c.prefix, err)
			}
		})
	}
}
