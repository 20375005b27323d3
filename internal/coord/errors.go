package coord

import "errors"

// Sentinel errors. Every error this package returns that matches one of
// these wraps it with %w, so callers test with errors.Is.
var (
	// ErrTopicExists: CreateTopic found the topic (or leftover partition
	// states under its name) already in etcd.
	ErrTopicExists = errors.New("coord: topic already exists")
	// ErrTopicNotFound: the topic key does not exist.
	ErrTopicNotFound = errors.New("coord: topic not found")
	// ErrConflict: a compare-and-swap lost, because the key's mod revision
	// is no longer the one the caller read (or a key it meant to create
	// already exists). Re-read and decide again.
	ErrConflict = errors.New("coord: revision conflict")
	// ErrConditionFailed: an extra Condition of a compare-and-swap did not
	// hold (a broker registration changed, the controller was deposed...).
	ErrConditionFailed = errors.New("coord: condition failed")
	// ErrBrokerIDInUse: another live registration holds this broker id.
	ErrBrokerIDInUse = errors.New("coord: broker id in use")
	// ErrSessionLost: the broker's lease expired, was revoked, or could not
	// be kept alive for its TTL.
	ErrSessionLost = errors.New("coord: session lost")
	// ErrClosed: the Client, Session or Cache was closed.
	ErrClosed = errors.New("coord: closed")
	// ErrInvalid: an argument cannot be stored (bad name, partition out of
	// range, state of another topic...).
	ErrInvalid = errors.New("coord: invalid argument")
	// ErrUnavailable: etcd could not be reached, or has no leader. For a
	// write the outcome is unknown: it may have been applied.
	ErrUnavailable = errors.New("coord: etcd unavailable")
	// ErrTxnTooLarge: etcd refused a transaction with more operations than
	// its --max-txn-ops (or bytes than --max-request-bytes). Topics with
	// very many partitions need those limits raised on an external etcd.
	ErrTxnTooLarge = errors.New("coord: transaction too large for etcd")
	// ErrNotFound: a key to delete does not exist (AlterScramCredentials).
	ErrNotFound = errors.New("coord: not found")
)
