package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"sort"
	"strings"
	"unicode/utf8"
)

// PlainChecker reports whether password is user's password. It returns false,
// not an error, for an unknown user; an error means the check could not be
// made (the store is unreachable, say).
type PlainChecker func(ctx context.Context, user, password string) (bool, error)

// NewPlainSession returns the server side of a PLAIN (RFC 4616) exchange:
// one client message, authzid NUL authcid NUL passwd, and an empty reply. The
// authzid must be empty or equal the authcid, as Kafka requires.
func NewPlainSession(check PlainChecker) Session {
	return &plainSession{check: check}
}

// plainSession is owned by the connection's reader goroutine.
type plainSession struct {
	check PlainChecker
	state saslState
	// user is the authenticated user, set when state becomes done.
	user string
}

var _ Session = (*plainSession)(nil)

func (s *plainSession) User() string { return s.user }

func (s *plainSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if err := finishedStepError(s.state); err != nil {
		return nil, false, err
	}
	s.state = saslStateFailed // until the message proves otherwise
	user, err := s.authenticate(ctx, msg)
	if err != nil {
		return nil, false, err
	}
	s.state = saslStateDone
	s.user = user
	return nil, true, nil
}

func (s *plainSession) authenticate(ctx context.Context, msg []byte) (string, error) {
	if len(msg) > maxSASLMessageSize {
		return "", saslFail(reasonTooLarge)
	}
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", saslFail("malformed PLAIN message: want authzid NUL authcid NUL passwd")
	}
	authzid, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" {
		return "", saslFail("user name not specified")
	}
	if password == "" {
		return "", saslFail("password not specified")
	}
	if !utf8.ValidString(authzid) || !utf8.ValidString(user) || !utf8.ValidString(password) {
		return "", saslFail("malformed PLAIN message: not UTF-8")
	}
	// The authzid is checked before the password: it depends only on the
	// message, so failing early reveals nothing about the user.
	if authzid != "" && authzid != user {
		return "", saslFail(reasonAuthzidMismatch)
	}
	if s.check == nil {
		return "", saslFailCause(reasonUnverifiable, errors.New("auth: no PLAIN checker configured"))
	}
	ok, err := s.check(ctx, user, password)
	if err != nil {
		return "", saslFailCause(reasonUnverifiable, err)
	}
	if !ok {
		return "", saslFail(reasonInvalidCredentials)
	}
	return user, nil
}

// PlainUsers maps user names to passwords: the user_NAME="password" entries of
// a PlainLoginModule JAAS configuration. Its Check method is a PlainChecker.
type PlainUsers map[string]string

// plainDummyPassword stands in for an unknown user's password so that Check
// does the same work whether or not the user exists.
const plainDummyPassword = "samsa-dummy-password-for-unknown-users"

// Check implements PlainChecker. Passwords are compared through their SHA-256
// digests with crypto/subtle, so the time taken depends neither on how much of
// the password matches nor on its length; an unknown user is compared against
// a dummy password so that the timing does not reveal whether the user exists.
func (u PlainUsers) Check(_ context.Context, user, password string) (bool, error) {
	want, known := u[user]
	if !known {
		want = plainDummyPassword
	}
	got := sha256.Sum256([]byte(password))
	exp := sha256.Sum256([]byte(want))
	equal := subtle.ConstantTimeCompare(got[:], exp[:]) == 1
	return known && equal, nil
}

// String lists the user names only, so that printing the map never prints a
// password.
func (u PlainUsers) String() string {
	names := make([]string, 0, len(u))
	for name := range u {
		names = append(names, name)
	}
	sort.Strings(names)
	return "PlainUsers[" + strings.Join(names, " ") + "]"
}

// GoString is String, for %#v.
func (u PlainUsers) GoString() string { return u.String() }
