// Package coord is samsa's coordination layer and the only package that
// talks to etcd (etcd takes ZooKeeper's place in Kafka's design). It keeps
// the cluster metadata in etcd, registers brokers on leases, writes every
// shared state by compare-and-swap, keeps a watch-maintained local cache of
// all of it, and can run an etcd member inside the samsa process.
//
// # Keyspace
//
// All keys of one samsa cluster live under /samsa/<cluster>/, where
// <cluster> is a name given to Connect ("default" unless configured).
// Several samsa clusters can share one etcd. Values are JSON as written by
// meta.Encode, except where noted.
//
//	key                       value                               written by
//	cluster-id                22-character URL-safe base64 UUID   the first ClusterID call, create-if-absent txn; never changed
//	                          (plain text, Kafka's rendering)
//	brokers/<id>              meta.Broker                         the broker itself, on its lease (RegisterBroker)
//	controller                {"broker_id": N}, on that broker's   the broker that wins the election (Session.Campaign),
//	                          lease; create revision = epoch      create-if-absent; deleted by its lease ending or Resign
//	topics/<name>             meta.Topic                          whoever creates or alters the topic (CreateTopic, UpdateTopic)
//	partitions/<topic>/<p>    meta.PartitionState                 CreateTopic/UpdateTopic (initial state), then the controller
//	                                                              (elections) and the partition leader (ISR changes), by CAS
//	producer-ids              next free producer id (decimal)     brokers, by CAS (AllocateProducerIDs)
//	heartbeats/<id>           {"incarnation": create revision of  the broker's session, on its lease, with every renewal
//	                          the registration,                   (see Liveness); the Cache ignores these
//	                          "session_timeout_ms": N}
//	scram/<mechanism>/<user>  meta.ScramCredential (salted; never   AlterScramCredentials (AlterUserScramCredentials, one txn per
//	                          the password)                       user), PutScramCredential (samsa server --add-scram); read at every login
//	scram-fake-key            32 random bytes, base64             the first ScramFakeKey call, create-if-absent; never changed
//	acls/<hash>               meta.ACL; <hash> is the hex SHA-256  CreateACLs (CreateAcls), DeleteACLs (DeleteAcls); the Cache
//	                          of the value (ACLKey)               holds them all (Snapshot.ACLs)
//
// The ISR history lives beside that prefix, under
// /samsa-isr-history/<cluster>/, so that the Cache, which reads and watches
// all of /samsa/<cluster>/, never carries it:
//
//	<topic id>/<p>/<epoch>    meta.ISRChange: one per stored       the writer of the change (CASPartitionStateNoted), in the
//	                          leader or ISR change; <epoch> is     same txn as the state; the last ISRHistoryLen kept, older
//	                          the partition epoch, zero-padded     ones deleted by that txn; DeleteTopic deletes the topic's;
//	                          to 10 digits                         read by ISRHistory (serializable)
//
// <id> and <p> are decimal; <user> has '%' and '/' escaped as %25 and %2F. Topic names follow Kafka's rules (1..249
// characters of [a-zA-Z0-9._-]), so they contain no '/' and every key
// parses back unambiguously; keys this package does not know are ignored.
//
// # Writes, compare-and-swap and fencing
//
// Every write is one etcd transaction, so readers never see half of one:
//
//   - CreateTopic puts the topic and the initial states of its partitions
//     in one transaction that commits only if the topic key and every key
//     under partitions/<topic>/ are absent (else ErrTopicExists).
//   - DeleteTopic deletes the topic key, the partitions/<topic>/ range and
//     the topic's ISR history together.
//   - UpdateTopic is a read-modify-write loop: it compares the topic key's
//     mod revision with the one it read, and on a lost race reads again
//     and re-applies the caller's function, so concurrent updates never
//     lose one another. New partition states (CreatePartitions) are created
//     in the same transaction, each conditioned on being absent.
//   - CASPartitionState writes one state if its key's mod revision is still
//     the one the writer read (0: the key must not exist), the topic still
//     exists, and every extra Condition holds. The mod revision it returns
//     is the one to compare against next time. Conditions compare another
//     key's create or mod revision: BrokerRegistered (a leader adding a
//     follower to the ISR conditions the write on the follower's
//     registration being the live one it saw, so a dead or restarted broker
//     never joins the ISR), Session.Condition (a leader fencing its own
//     writes with its own registration), TopicUnchanged, and ControllerIs
//     (the controller key still has the controller's epoch as its create
//     revision: every controller write is fenced by it). A failed CAS reports ErrConflict if the state moved,
//     ErrConditionFailed naming the condition otherwise, ErrTopicNotFound
//     if the topic is gone.
//   - AllocateProducerIDs advances producer-ids by CAS, so blocks never
//     overlap.
//
// This package stores the states it is given: bumping LeaderEpoch and
// PartitionEpoch, and keeping the leader in the ISR, is the writer's job.
//
// Every write records its commit revision; Client.LastRevision is the
// highest, and Cache.WaitRevision(ctx, c.LastRevision()) gives
// read-your-writes.
//
// CreateTopic writes len(states)+1 keys in one transaction, which etcd
// limits (--max-txn-ops, default 128; --max-request-bytes, default 1.5 MiB).
// The embedded member raises these to 10240 operations and 8 MiB; an
// external etcd must be configured likewise for topics with more than 127
// partitions. Beyond the limit the write fails with ErrTxnTooLarge.
//
// # Broker sessions
//
// RegisterBroker grants a lease with the session timeout as TTL, puts
// brokers/<id> on it with a create-if-absent transaction (ErrBrokerIDInUse
// if another live registration holds the id; a leftover of the very same
// incarnation, an equal meta.Broker, is revoked and replaced), renews it
// once in the foreground and keeps it alive in the background. The key's
// create revision identifies the incarnation. Session.UpdateRegistration
// rewrites the value in place (same lease, same create revision, only while
// it is still this session's): MarkShuttingDown for controlled shutdown,
// SetRecovering for a broker restarted after an unclean shutdown.
//
// Session.Done closes when the lease is lost: revoked (by a peer's fence,
// see Liveness), expired, or not renewed in time because etcd is
// unreachable. A renewal is a KeepAliveOnce and a heartbeat write, sent
// together under one bound (keepAliveAttempt); the
// session counts the TTL (and the session timeout) from the send of its
// own last successful renewal minus a margin (a quarter, at most one
// second), because etcd counts the TTL from the moment it handled the
// renewal, and peers the session timeout from when its heartbeat landed,
// both later: so the broker learns that it must stop acting as leader
// before its registration can be deleted and the controller elects other
// leaders. A lease revoked by someone else is noticed at the next renewal
// (every eighth of the session timeout, 100 ms to 1 s). Session.Close
// revokes the lease, deleting the registration at once; Client.Close
// without Session.Close leaves it to expire, as a crash would.
//
// # Cache
//
// Cache is the metadata every broker reads. NewCache reads the whole
// cluster prefix (one Get, at revision R) and watches it from R+1. Each
// watch response is applied as a whole to a copy of the current Snapshot
// (copy on write: only the maps and per-topic partition slices that change
// are copied), which is then published through an atomic pointer; readers
// never lock, and a Snapshot never changes once published. Snapshot.Revision
// is the revision of the last applied event (not the response header's,
// which runs ahead while a watch catches up), or of a progress
// notification, which etcd sends only when every earlier event has been
// delivered.
//
// Changed returns a channel closed at the next publication with new
// content (a broadcast; a fresh channel replaces it). WaitRevision waits
// until Snapshot.Revision reaches a revision; since a revision may belong to
// a key outside the prefix, which produces no event, it also asks etcd for
// progress notifications while it waits. Sync waits for etcd's current
// revision.
//
// When the watch fails (history compacted past it, no leader, stream
// closed), the cache reads the whole prefix again, publishes that, and
// watches from the new revision, retrying reads with backoff (100 ms to
// 2 s). A value that does not decode is logged and left out of the
// snapshot. ControllerID and ControllerEpoch mirror the controller key
// (-1 and 0 while there is none).
//
// # Timeouts and errors
//
// Every call takes a context. Calls whose context has no deadline get the
// client's request timeout (WithRequestTimeout, default 10 s), Connect the
// dial timeout (WithDialTimeout, default 5 s), so nothing waits forever on
// an unreachable etcd; gRPC retries a lost connection at least every
// 2.4 s (its default backoff grows to two minutes). Errors
// wrap this package's sentinels (ErrTopicExists, ErrConflict, ...) and the
// cause with %w; context errors stay matchable with errors.Is, and
// ErrUnavailable marks a failure to reach etcd, after which the outcome of
// a write is unknown.
//
// # Goroutines
//
// Each Session runs one keepalive goroutine (renewals and heartbeats, the
// heartbeat of a renewal on a goroutine of its own, waited for);
// WatchPeers runs on its caller's goroutine; each Cache runs its watch
// goroutine and one that requests progress notifications. All are owned by
// the Client: Session.Close and Cache.Close stop and wait for their own,
// Client.Close stops and waits for all of them before closing the
// connection.
//
// # Liveness
//
// A broker's registration must not depend on how busy its request path is
// (issue 16: a client that pipelined fetches without reading them grew a
// broker's memory by gigabytes until it missed its keepalives, lost its
// registration and shut down). What keeps it registered:
//
//   - The Session's keepalive goroutine, which does nothing but renew the
//     lease with one bounded KeepAliveOnce at a time (see keepAliveInterval
//     for why not etcd's stream) and write the heartbeat beside each. It takes no lock that request handling
//     holds; Session.mu is a leaf, never held across an etcd call.
//
//   - Its own etcd connection: the broker opens two Clients, one for the
//     request path (the metadata cache's watch, topic creations and
//     changes, ISR updates, producer-id blocks) and one for its
//     registration and the controller (RegisterBroker, the session's
//     keepalives, Campaign, the controller's fenced writes). gRPC
//     multiplexes calls over one HTTP/2 connection per Client, with flow
//     control per connection, so a burst of request-path calls with large
//     payloads could otherwise queue ahead of a renewal.
//
//   - The controller (internal/controller) runs on a goroutine of its own,
//     reading the Cache (whose lock is a leaf) and writing through the
//     second Client.
//
//   - Heartbeats and fencing (WatchPeers). An etcd leader that takes over
//     extends every lease by a whole TTL and an election timeout, since it
//     cannot know when each was last renewed; lease checkpointing would
//     avoid it, but etcd checkpoints only leases with more than its
//     checkpoint interval (5 minutes) left. So when the dead broker hosted
//     the etcd leader, its lease alone would outlive it by that much. Each
//     renewal therefore also writes heartbeats/<id> (a raft write: it
//     lands only through the quorum, and only while the registration is
//     that incarnation's), and every broker watches the others' heartbeats
//     and fences one whose heartbeat has not landed for its session
//     timeout, provided two of its own landed since (a paused or cut-off
//     broker fences nobody): one transaction, conditioned on the peer's
//     heartbeat being the one it judged by, deletes the peer's
//     registration, heartbeat and controller key, then its lease is
//     revoked. The fenced broker has declared its own session lost before
//     (see Broker sessions), and acknowledges no write past that deadline
//     (Session.Live). A fenced broker that is alive registers again as a
//     new incarnation (internal/broker, Run). While etcd takes no writes
//     (its space quota exhausted: the NOSPACE alarm) no heartbeat lands,
//     so every session ends until an operator frees space.
//
// Nothing on those paths waits on a Kafka client: no lock, queue or
// channel of internal/protocol or of the request handlers. What they do
// share with the request path is the process: with an embedded etcd member,
// etcd's server runs in the broker's process too, so the broker's memory
// and CPU matter. Memory is bounded by the protocol server's budget
// (queued.max.request.bytes, docs/config.md); CPU is shared by Go's
// scheduler. Not bounded: the etcd load that admin requests cause (a client
// creating and deleting topics in a loop); Kafka bounds that with
// controller mutation quotas (KIP-599), which samsa does not have.
//
// # Embedded etcd
//
// StartEmbedded runs an etcd member in-process (for `samsa server` without
// an external etcd) and returns once it serves clients. Port 0 in its URLs
// picks free ports (ports are chosen before etcd binds them, so that the
// member advertises real ones; a lost race is retried). It compacts revision
// history older than ten minutes. etcd's zap logs go to the given slog
// logger at error level only, and at debug level once Close has begun
// (etcd reports its own orderly shutdown as errors).
//
// # TLS
//
// TLS is on exactly when the etcd URLs are https:// (tls.go). A member
// with https URLs serves its client and peer URLs with the keystore's
// certificate and requires from every client and peer a certificate issued
// by the truststore's CAs (EmbeddedConfig.KeystoreFile, TruststoreFile);
// a Client dials https endpoints with the *tls.Config of WithTLS, which
// internal/broker builds from its metadata.etcd.ssl.* settings with
// internal/auth (this package does not import it). http and https mixed,
// https without TLS material and TLS material with http URLs are
// ErrInvalid.
package coord
