package auth

import (
	"context"
	"errors"
)

// Mechanism names as Kafka spells them in SaslHandshake.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// maxSASLMessageSize caps one client message of any mechanism. Real PLAIN and
// SCRAM messages are well under 1 KiB; the wire layer separately enforces
// Kafka's sasl.server.max.receive.size (512 KiB) on the frame.
const maxSASLMessageSize = 64 << 10

// Session is the server side of one SASL exchange on one connection.
//
// A Session is owned by the connection's reader goroutine and is not safe for
// concurrent use.
type Session interface {
	// Step consumes the client's next message and returns the server's
	// next message. done is true once the client is authenticated (reply
	// may then still need sending: SCRAM's server-final message). A non-nil
	// error means authentication failed; the error text is safe to send to
	// the client (it does not reveal whether the user exists) and errors
	// wrap ErrAuthentication (errors.Is). Step after done or after an error
	// returns an error.
	Step(ctx context.Context, msg []byte) (reply []byte, done bool, err error)
	// User is the authenticated user name once done ("" before).
	User() string
}

// ErrAuthentication is wrapped by every error a Session returns.
var ErrAuthentication = errors.New("auth: authentication failed")

// ErrUnknownMechanism is returned for a mechanism name this package does not
// implement.
var ErrUnknownMechanism = errors.New("auth: unknown SASL mechanism")

// SASLError is an authentication failure. Its Error text is
// "auth: authentication failed: " + Reason and is safe to send to the client.
// Err is the internal cause, if any (a store error, a broken credential); it
// is for the broker's log and must not be sent to the client.
type SASLError struct {
	// Reason says what was wrong with the client's message, in terms that
	// do not reveal whether the user exists.
	Reason string
	// Err is the internal cause, or nil.
	Err error
}

func (e *SASLError) Error() string { return ErrAuthentication.Error() + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrAuthentication) true and reaches the cause.
func (e *SASLError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrAuthentication}
	}
	return []error{ErrAuthentication, e.Err}
}

func saslFail(reason string) error { return &SASLError{Reason: reason} }

func saslFailCause(reason string, cause error) error { return &SASLError{Reason: reason, Err: cause} }

// Reasons shared by the mechanisms. reasonInvalidCredentials is the only
// reason a wrong password or an unknown user ever produces.
const (
	reasonInvalidCredentials = "invalid credentials"
	reasonUnverifiable       = "credentials could not be verified"
	reasonAlreadyDone        = "authentication exchange already complete"
	reasonAlreadyFailed      = "authentication exchange already failed"
	reasonTooLarge           = "message too large"
	reasonAuthzidMismatch    = "authorization id differs from user name"
)

// saslState is where a session is in its exchange. Mechanisms use the subset
// they need.
type saslState uint8

const (
	saslStateStart       saslState = iota // waiting for the client's first message
	saslStateClientFinal                  // SCRAM: server-first sent, waiting for client-final
	saslStateDone                         // authenticated
	saslStateFailed                       // failed; every further Step fails
)

// finishedStepError returns the error for a Step on a finished session, or nil
// if the session still expects a message.
func finishedStepError(s saslState) error {
	switch s {
	case saslStateDone:
		return saslFail(reasonAlreadyDone)
	case saslStateFailed:
		return saslFail(reasonAlreadyFailed)
	}
	return nil
}
