package auth

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
)

// Review finding (fixed): SCRAM user enumeration. The fake credential of
// an unknown user offers a 32-byte salt and ScramDefaultIterations; a
// credential samsa's tools make (--add-scram through NewScramCredential
// with a nil salt, `samsa user scram set`, which salts 32 bytes itself with
// 4096 iterations by default) must look the same in server-first, or an
// unauthenticated client learns whether a user exists without sending a
// proof. (kadm's own salting, 24 bytes, and the old default of 8192
// iterations did not.)
func TestReview1ScramUnknownUserIndistinguishable(t *testing.T) {
	cred, err := NewScramCredential(MechanismScramSHA256, "alice-secret", nil, ScramDefaultIterations)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(_ context.Context, mech, user string) (ScramCredential, bool, error) {
		if user == "alice" {
			return cred, true, nil
		}
		return ScramCredential{}, false, nil
	}
	serverFirst := func(user string) (saltLen int, iter string) {
		s, err := NewScramSession(MechanismScramSHA256, lookup)
		if err != nil {
			t.Fatal(err)
		}
		reply, _, err := s.Step(context.Background(), []byte("n,,n="+user+",r=abcdefgh"))
		if err != nil {
			t.Fatal(err)
		}
		for _, attr := range strings.Split(string(reply), ",") {
			switch {
			case strings.HasPrefix(attr, "s="):
				b, _ := base64.StdEncoding.DecodeString(attr[2:])
				saltLen = len(b)
			case strings.HasPrefix(attr, "i="):
				iter = attr[2:]
			}
		}
		return saltLen, iter
	}
	ks, ki := serverFirst("alice")
	us, ui := serverFirst("nobody")
	if ks != us || ki != ui {
		t.Fatalf("server-first tells users apart: existing user: %d-byte salt, i=%s; unknown user: %d-byte salt, i=%s",
			ks, ki, us, ui)
	}
}

// Review finding (same oracle, second form): the fake salt comes from
// scramFakeKey, random per process. A real user's salt is in etcd and the
// same on every broker and after every restart; an unknown user's differs
// from broker to broker. Asking two brokers of a cluster for the same name
// (or one broker before and after a restart) tells whether it exists, even
// for credentials whose salt length and iterations match the fake's
// (--add-scram's). The second broker is simulated by a new scramFakeKey.
func TestReview1ScramFakeSaltStableAcrossBrokers(t *testing.T) {
	lookup := func(context.Context, string, string) (ScramCredential, bool, error) {
		return ScramCredential{}, false, nil
	}
	clusterKey := []byte("one secret shared by the cluster's brokers")
	saltOf := func() string {
		s, err := NewScramSessionKeyed(MechanismScramSHA256, lookup, clusterKey)
		if err != nil {
			t.Fatal(err)
		}
		reply, _, err := s.Step(context.Background(), []byte("n,,n=nobody,r=abcdefgh"))
		if err != nil {
			t.Fatal(err)
		}
		for _, attr := range strings.Split(string(reply), ",") {
			if strings.HasPrefix(attr, "s=") {
				return attr[2:]
			}
		}
		return ""
	}
	broker1 := saltOf()
	saved := scramFakeKey
	defer func() { scramFakeKey = saved }()
	scramFakeKey = make([]byte, 32)
	for i := range scramFakeKey {
		scramFakeKey[i] = byte(255 - i)
	}
	broker2 := saltOf()
	if broker1 != broker2 {
		t.Fatalf("an unknown user's salt differs between two brokers (%s vs %s), a real user's never does", broker1, broker2)
	}
}
