package auth

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kafka's limits on SCRAM iterations (ScramMechanism's minimum and
// AlterUserScramCredentials' maximum). ScramDefaultIterations is what
// kafka-configs uses when none is given, and what an unknown user is offered.
const (
	ScramMinIterations     = 4096
	ScramMaxIterations     = 16384
	ScramDefaultIterations = 4096
)

const (
	// scramSaltSize is the size of a salt NewScramCredential generates and
	// of the fake salt an unknown user is offered.
	scramSaltSize = 32
	// scramServerNonceSize is the number of random bytes the server adds
	// to the client's nonce (RFC 5802 asks for enough to be unpredictable;
	// Kafka uses 130 bits).
	scramServerNonceSize = 24
)

// ScramCredential is what the server stores for one user and one SCRAM
// mechanism (RFC 5802 section 3): never the password, only what verifies a
// proof and signs the server-final message.
type ScramCredential struct {
	Mechanism  string // MechanismScramSHA256 or MechanismScramSHA512
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// ScramLookup returns the user's credential for the mechanism; ok is false if
// there is none (the user is unknown or has no credential for the mechanism).
// An error means the lookup could not be made.
type ScramLookup func(ctx context.Context, mechanism, user string) (cred ScramCredential, ok bool, err error)

// scramHash is one SCRAM mechanism's hash.
type scramHash struct {
	mechanism string
	newHash   func() hash.Hash
	size      int
}

func scramHashFor(mechanism string) (scramHash, bool) {
	switch mechanism {
	case MechanismScramSHA256:
		return scramHash{mechanism, sha256.New, sha256.Size}, true
	case MechanismScramSHA512:
		return scramHash{mechanism, sha512.New, sha512.Size}, true
	}
	return scramHash{}, false
}

func (h scramHash) hmac(key []byte, parts ...string) []byte {
	m := hmac.New(h.newHash, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

func (h scramHash) sum(b []byte) []byte {
	d := h.newHash()
	d.Write(b)
	return d.Sum(nil)
}

// NewScramCredential derives a credential for mechanism from a password:
// SaltedPassword is PBKDF2 with the mechanism's HMAC, then StoredKey and
// ServerKey as RFC 5802 defines them. iterations must be within Kafka's
// limits, ScramMinIterations to ScramMaxIterations. A nil salt means a random
// 32-byte salt; a non-nil salt must not be empty. The password is used as its
// UTF-8 bytes without SASLprep, as Kafka does.
func NewScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h, ok := scramHashFor(mechanism)
	if !ok {
		return ScramCredential{}, fmt.Errorf("%w: %q", ErrUnknownMechanism, mechanism)
	}
	if iterations < ScramMinIterations || iterations > ScramMaxIterations {
		return ScramCredential{}, fmt.Errorf("auth: SCRAM iterations %d outside %d..%d", iterations, ScramMinIterations, ScramMaxIterations)
	}
	if password == "" {
		return ScramCredential{}, errors.New("auth: SCRAM password must not be empty")
	}
	switch {
	case salt == nil:
		salt = make([]byte, scramSaltSize)
		rand.Read(salt)
	case len(salt) == 0:
		return ScramCredential{}, errors.New("auth: SCRAM salt must not be empty")
	default:
		salt = append([]byte(nil), salt...)
	}
	salted, err := pbkdf2.Key(h.newHash, password, salt, iterations, h.size)
	if err != nil {
		return ScramCredential{}, fmt.Errorf("auth: SCRAM key derivation: %w", err)
	}
	return ScramCredential{
		Mechanism:  mechanism,
		Salt:       salt,
		Iterations: iterations,
		StoredKey:  h.sum(h.hmac(salted, "Client Key")),
		ServerKey:  h.hmac(salted, "Server Key"),
	}, nil
}

// ScramCredentialFromSalted derives a credential from a SaltedPassword a
// client computed itself, as AlterUserScramCredentials carries it (the
// password never reaches the broker); salt and salted must not be empty.
func ScramCredentialFromSalted(mechanism string, salt, salted []byte, iterations int) (ScramCredential, error) {
	h, ok := scramHashFor(mechanism)
	if !ok {
		return ScramCredential{}, fmt.Errorf("%w: %q", ErrUnknownMechanism, mechanism)
	}
	switch {
	case iterations < ScramMinIterations || iterations > ScramMaxIterations:
		return ScramCredential{}, fmt.Errorf("auth: SCRAM iterations %d outside %d..%d", iterations, ScramMinIterations, ScramMaxIterations)
	case len(salt) == 0:
		return ScramCredential{}, errors.New("auth: SCRAM salt must not be empty")
	case len(salted) == 0:
		// Any other length is taken, as Kafka takes it (kafka-go's tests
		// send 18 bytes); only a PBKDF2 output of the hash's size can
		// ever log in.
		return ScramCredential{}, errors.New("auth: SCRAM salted password must not be empty")
	}
	return ScramCredential{
		Mechanism:  mechanism,
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  h.sum(h.hmac(salted, "Client Key")),
		ServerKey:  h.hmac(salted, "Server Key"),
	}, nil
}

// check reports what is wrong with a credential a lookup returned for h.
func (c ScramCredential) check(h scramHash) error {
	switch {
	case c.Mechanism != h.mechanism:
		return fmt.Errorf("auth: SCRAM credential is for mechanism %q, want %q", c.Mechanism, h.mechanism)
	case len(c.Salt) == 0:
		return errors.New("auth: SCRAM credential has an empty salt")
	case c.Iterations < ScramMinIterations || c.Iterations > ScramMaxIterations:
		return fmt.Errorf("auth: SCRAM credential has %d iterations, outside %d..%d", c.Iterations, ScramMinIterations, ScramMaxIterations)
	case len(c.StoredKey) != h.size || len(c.ServerKey) != h.size:
		return fmt.Errorf("auth: SCRAM credential keys are not %d bytes", h.size)
	}
	return nil
}

// scramFakeKey is the per-process secret from which unknown users' fake
// salts and keys are derived when the session is given no cluster-wide one
// (NewScramSessionKeyed): deterministic within a process, so that asking
// twice for the same unknown user gets the same salt, as a real user would,
// and unpredictable across processes. A real user's salt is the same on
// every broker, so brokers share one key (the broker keeps it in etcd),
// or asking two of them would tell an unknown user apart.
var scramFakeKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

// scramFakeCredential is what an unknown user is offered: a salt derived from
// the mechanism and user name, the default iterations, and keys no password
// matches (and that are never accepted anyway).
func scramFakeCredential(h scramHash, user string, key []byte) ScramCredential {
	if len(key) == 0 {
		key = scramFakeKey
	}
	salt := hmac.New(sha256.New, key)
	salt.Write([]byte("salt\x00" + h.mechanism + "\x00" + user))
	return ScramCredential{
		Mechanism:  h.mechanism,
		Salt:       salt.Sum(nil)[:scramSaltSize],
		Iterations: ScramDefaultIterations,
		StoredKey:  h.hmac(key, "stored-key\x00", h.mechanism),
		ServerKey:  h.hmac(key, "server-key\x00", h.mechanism),
	}
}

// scramServerNonce returns the random part the server appends to the client's
// nonce: printable, without ','.
func scramServerNonce() string {
	b := make([]byte, scramServerNonceSize)
	rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// NewScramSession returns the server side of a SCRAM-SHA-256 or SCRAM-SHA-512
// exchange (RFC 5802): client-first, server-first, client-final, server-final.
// It returns an error wrapping ErrUnknownMechanism for any other mechanism.
func NewScramSession(mechanism string, lookup ScramLookup) (Session, error) {
	return newScramSession(mechanism, lookup, scramServerNonce)
}

// NewScramSessionKeyed is NewScramSession with the cluster-wide secret from
// which unknown users' fake salts are derived, so that every broker offers
// an unknown user the same salt, as it would a real one's.
func NewScramSessionKeyed(mechanism string, lookup ScramLookup, fakeKey []byte) (Session, error) {
	s, err := newScramSession(mechanism, lookup, scramServerNonce)
	if err != nil {
		return nil, err
	}
	s.fakeKey = append([]byte(nil), fakeKey...)
	return s, nil
}

func newScramSession(mechanism string, lookup ScramLookup, serverNonce func() string) (*scramSession, error) {
	h, ok := scramHashFor(mechanism)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownMechanism, mechanism)
	}
	if lookup == nil {
		return nil, errors.New("auth: SCRAM session needs a credential lookup")
	}
	return &scramSession{hash: h, lookup: lookup, serverNonce: serverNonce}, nil
}

// scramSession is owned by the connection's reader goroutine. The fields below
// state are set by the client-first step and read by the client-final step.
type scramSession struct {
	hash        scramHash
	lookup      ScramLookup
	serverNonce func() string // the random suffix of the combined nonce; a test seam
	// fakeKey derives unknown users' fake credentials; nil: scramFakeKey.
	fakeKey []byte

	state saslState

	// user is the decoded user name from client-first.
	user string
	// known is false when the user had no credential and cred is fake.
	known bool
	cred  ScramCredential
	// gs2Header is the client's GS2 header ("n,," or "y,," or with an
	// authzid), which client-final must echo in c=.
	gs2Header string
	// clientFirstBare, serverFirst and nonce (client nonce + server
	// nonce) go into the AuthMessage.
	clientFirstBare string
	serverFirst     string
	nonce           string
	// clientNonce is the client's part of nonce.
	clientNonce string

	// authenticated is the user name once state is done.
	authenticated string
}

var _ Session = (*scramSession)(nil)

func (s *scramSession) User() string { return s.authenticated }

func (s *scramSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if err := finishedStepError(s.state); err != nil {
		return nil, false, err
	}
	state := s.state
	s.state = saslStateFailed // until the message proves otherwise
	switch {
	case len(msg) == 0:
		return nil, false, saslFail("empty SCRAM message")
	case len(msg) > maxSASLMessageSize:
		return nil, false, saslFail(reasonTooLarge)
	case !utf8.Valid(msg):
		return nil, false, saslFail("malformed SCRAM message: not UTF-8")
	}
	switch state {
	case saslStateStart:
		reply, err := s.clientFirst(ctx, string(msg))
		if err != nil {
			return nil, false, err
		}
		s.state = saslStateClientFinal
		return reply, false, nil
	case saslStateClientFinal:
		reply, err := s.clientFinal(string(msg))
		if err != nil {
			return nil, false, err
		}
		s.state = saslStateDone
		s.authenticated = s.user
		return reply, true, nil
	}
	return nil, false, saslFail(reasonAlreadyFailed) // unreachable
}

// clientFirst handles
//
//	client-first-message = gs2-header client-first-message-bare
//	gs2-header = gs2-cbind-flag "," [ authzid ] ","
//	client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
//
// and returns the server-first message
//
//	server-first-message = nonce "," salt "," iteration-count
func (s *scramSession) clientFirst(ctx context.Context, msg string) ([]byte, error) {
	cbind, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, saslFail("malformed SCRAM client-first message: no GS2 header")
	}
	switch {
	case cbind == "n" || cbind == "y":
		// "y": the client could bind but thinks we cannot. We offer no
		// -PLUS mechanism, so that is right and not a downgrade.
	case strings.HasPrefix(cbind, "p="):
		return nil, saslFail("SCRAM channel binding is not supported")
	default:
		return nil, saslFail("malformed SCRAM client-first message: bad GS2 channel-binding flag")
	}
	authzPart, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, saslFail("malformed SCRAM client-first message: incomplete GS2 header")
	}
	var authzid string
	if authzPart != "" {
		v, ok := strings.CutPrefix(authzPart, "a=")
		if !ok {
			return nil, saslFail("malformed SCRAM client-first message: bad authorization id")
		}
		var err error
		if authzid, err = scramDecodeSaslname(v); err != nil {
			return nil, err
		}
	}
	gs2Header := msg[:len(cbind)+1+len(authzPart)+1]

	attrs := strings.Split(bare, ",")
	if strings.HasPrefix(attrs[0], "m=") {
		return nil, saslFail("SCRAM mandatory extension (m=) is not supported")
	}
	if len(attrs) < 2 {
		return nil, saslFail("malformed SCRAM client-first message: want n= and r=")
	}
	name, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return nil, saslFail("malformed SCRAM client-first message: want n= first")
	}
	user, err := scramDecodeSaslname(name)
	if err != nil {
		return nil, err
	}
	clientNonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok {
		return nil, saslFail("malformed SCRAM client-first message: want r= after n=")
	}
	if !scramPrintable(clientNonce) {
		return nil, saslFail("malformed SCRAM client-first message: nonce empty or not printable")
	}
	for _, ext := range attrs[2:] {
		key, err := scramExtension(ext)
		if err != nil {
			return nil, err
		}
		if key == "tokenauth" {
			// KIP-48 delegation tokens: not implemented.
			return nil, saslFail("SCRAM delegation token authentication (tokenauth) is not supported")
		}
		// Other extensions are ignored, as Kafka does.
	}
	// Depends only on the message, so failing here reveals nothing about
	// the user.
	if authzid != "" && authzid != user {
		return nil, saslFail(reasonAuthzidMismatch)
	}

	cred, known, err := s.lookup(ctx, s.hash.mechanism, user)
	if err != nil {
		return nil, saslFailCause(reasonUnverifiable, err)
	}
	if known {
		if err := cred.check(s.hash); err != nil {
			return nil, saslFailCause(reasonUnverifiable, err)
		}
	} else {
		// Answer as if the user existed and fail at the proof, so the
		// server-first message does not reveal whether the user exists.
		cred = scramFakeCredential(s.hash, user, s.fakeKey)
	}

	s.user, s.known, s.cred = user, known, cred
	s.gs2Header = gs2Header
	s.clientFirstBare = bare
	s.clientNonce = clientNonce
	s.nonce = clientNonce + s.serverNonce()
	s.serverFirst = "r=" + s.nonce +
		",s=" + base64.StdEncoding.EncodeToString(cred.Salt) +
		",i=" + strconv.Itoa(cred.Iterations)
	return []byte(s.serverFirst), nil
}

// clientFinal handles
//
//	client-final-message-without-proof = channel-binding "," nonce ["," extensions]
//	client-final-message = client-final-message-without-proof "," proof
//
// and returns the server-final message "v=" base64(ServerSignature).
func (s *scramSession) clientFinal(msg string) ([]byte, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, saslFail("malformed SCRAM client-final message: no proof")
	}
	withoutProof, proofText := msg[:i], msg[i+len(",p="):]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 {
		return nil, saslFail("malformed SCRAM client-final message: want c= and r=")
	}
	cbText, ok := strings.CutPrefix(attrs[0], "c=")
	if !ok {
		return nil, saslFail("malformed SCRAM client-final message: want c= first")
	}
	cb, err := base64.StdEncoding.Strict().DecodeString(cbText)
	if err != nil {
		return nil, saslFail("malformed SCRAM client-final message: channel binding is not base64")
	}
	if string(cb) != s.gs2Header {
		return nil, saslFail("SCRAM channel binding does not match the GS2 header")
	}
	nonce, ok := strings.CutPrefix(attrs[1], "r=")
	if !ok {
		return nil, saslFail("malformed SCRAM client-final message: want r= after c=")
	}
	// librdkafka before 2.6.1 sends the client's nonce twice
	// (confluentinc/librdkafka#4895), which Kafka 3.x took, checking that
	// the nonce ends with the combined one. That form is taken, and no
	// other: the proof covers the message as sent, whose nonce still
	// carries this session's server nonce.
	if nonce != s.nonce && nonce != s.clientNonce+s.nonce {
		return nil, saslFail("SCRAM nonce does not match")
	}
	for _, ext := range attrs[2:] {
		if _, err := scramExtension(ext); err != nil {
			return nil, err
		}
	}
	proof, err := base64.StdEncoding.Strict().DecodeString(proofText)
	if err != nil || strings.Contains(proofText, ",") {
		return nil, saslFail("malformed SCRAM client-final message: proof is not base64")
	}
	if len(proof) != s.hash.size {
		return nil, saslFail("malformed SCRAM client-final message: proof has the wrong length")
	}

	// ClientSignature := HMAC(StoredKey, AuthMessage)
	// ClientKey := ClientProof XOR ClientSignature
	// valid iff H(ClientKey) == StoredKey, compared in constant time
	// (CVE-2021-38153). An unknown user's fake credential goes through the
	// same computation and is then refused.
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	clientKey := s.hash.hmac(s.cred.StoredKey, authMessage)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	valid := hmac.Equal(s.hash.sum(clientKey), s.cred.StoredKey)
	if !valid || !s.known {
		return nil, saslFail(reasonInvalidCredentials)
	}
	serverSignature := s.hash.hmac(s.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil
}

// scramDecodeSaslname decodes RFC 5802's saslname: "=2C" is ',', "=3D" is '=',
// any other '=' is an error, and the result is non-empty UTF-8 without NUL.
func scramDecodeSaslname(s string) (string, error) {
	if s == "" {
		return "", saslFail("malformed SCRAM message: empty user name")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", saslFail("malformed SCRAM message: NUL in user name")
	}
	if strings.IndexByte(s, '=') < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", saslFail("malformed SCRAM message: bad '=' escape in user name")
		}
		i += 2
	}
	return b.String(), nil
}

// scramPrintable reports whether s is a non-empty RFC 5802 "printable": ASCII
// 0x21..0x7E except ','.
func scramPrintable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// scramExtension checks one extension attribute, key=value, and returns its
// key. The key is letters only (Kafka allows more than RFC 5802's single
// letter) and may not be one of the attributes RFC 5802 defines, which would
// mean a repeated or misplaced attribute; the value is non-empty, without NUL.
func scramExtension(attr string) (string, error) {
	key, value, ok := strings.Cut(attr, "=")
	if !ok || key == "" || value == "" || strings.IndexByte(value, 0) >= 0 {
		return "", saslFail("malformed SCRAM message: bad attribute")
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return "", saslFail("malformed SCRAM message: bad attribute")
		}
	}
	if len(key) == 1 && strings.Contains("aceimnprsv", key) {
		return "", saslFail("malformed SCRAM message: attribute " + key + "= out of place")
	}
	return key, nil
}
