// Package auth authenticates Kafka clients, with SASL mechanisms as
// server-side state machines over bytes and the configuration that feeds
// them, and answers authorization questions from ACLs. It knows no
// partitions, no connections and no Kafka request types; the broker moves
// the bytes of SaslHandshake/SaslAuthenticate in and out of a Session and
// asks ACLs about each request's resources.
//
// # SASL
//
// A Session is the server side of one SASL exchange on one connection. The
// broker picks the mechanism the client asked for in SaslHandshake, creates a
// session with NewPlainSession or NewScramSession, feeds every
// SaslAuthenticate payload to Session.Step and sends back the reply, until
// Step reports done (the client is authenticated as Session.User) or returns
// an error (authentication failed; the exchange is over). A session is used by
// one goroutine, the connection's reader, and is not safe for concurrent use.
//
// Errors from Step wrap ErrAuthentication and are *SASLError values: their
// text is safe to send to the client in SaslAuthenticate's error message, and
// never says whether the user exists. The cause behind a failure (a store
// error, say) is in SASLError.Err, for the broker's log only.
//
// Mechanisms:
//
//   - PLAIN (RFC 4616). The message is authzid NUL authcid NUL passwd. As in
//     Kafka, the authzid must be empty or equal the authcid: a client cannot
//     ask to act as another user (CVE-2017-12610 was a SASL impersonation).
//     Passwords are checked by a PlainChecker; PlainUsers, the user_NAME
//     entries of a PlainLoginModule JAAS configuration, is one, and compares in
//     constant time, against a dummy when the user is unknown.
//   - SCRAM-SHA-256 (RFC 5802, RFC 7677) and SCRAM-SHA-512, as Kafka does.
//     Credentials (salt, iterations, StoredKey, ServerKey; never the
//     password) come from a ScramLookup; NewScramCredential derives them with
//     Kafka's limits (4096 to 16384 iterations). The client proof is compared
//     in constant time (CVE-2021-38153). An unknown user gets a server-first
//     message like a real one (a salt derived from the user name with a
//     per-process key, the default iterations) and fails at the proof, with
//     the same error as a wrong password. Channel binding (-PLUS, "p="), the
//     "m=" extension and Kafka's delegation-token extension "tokenauth" are
//     refused.
//
// Each message is capped at 64 KiB before it is parsed, below Kafka's
// sasl.server.max.receive.size (512 KiB) that the wire layer enforces.
//
// ParseJAAS reads Kafka's sasl.jaas.config value. It accepts only Kafka's
// PlainLoginModule and ScramLoginModule: any other class is refused by name,
// because arbitrary login modules in sasl.jaas.config are how
// CVE-2023-25194, CVE-2025-27818 and CVE-2025-27819 reached remote code
// execution. samsa never loads code from the configuration; the module name
// only selects which options are read.
//
// # TLS
//
// NewServerTLS builds a listener's TLS configuration from Kafka's ssl.*
// settings (TLSSettings). Only PEM is read: ssl.keystore.type JKS or PKCS12
// is refused with a hint to convert. The key and chain come from
// ssl.keystore.location (one file, blocks in any order; the certificate of
// the key goes first) or inline from ssl.keystore.key and
// ssl.keystore.certificate.chain; the CAs from ssl.truststore.location or
// ssl.truststore.certificates. Encrypted keys are refused (ErrEncryptedKey):
// Go's standard library cannot decrypt them, so ssl.key.password has no use.
// TLS 1.2 is the minimum. ssl.client.auth=requested or required verifies
// client certificates against the truststore, which it then needs (without
// one Go would trust the system's CAs).
//
// ServerTLS.Config's GetConfigForClient looks, at most once a second, at the
// keystore and truststore files (modification time, size, identity) and
// reloads them when they changed, so renewed certificates apply to new
// connections without a restart and without a goroutine. A change that does
// not load (a half-written file, a key of another certificate) keeps the
// previous material and is reported to the onReloadError callback; the file
// is tried again when it changes again. Inline PEM never changes.
//
// ClientConfig is the client side (inter-broker connections, the CLI):
// ssl.endpoint.identification.algorithm=https checks the server's host name;
// empty checks the chain only.
//
// The principal of an mTLS client is "User:" and the subject DN of its
// certificate, printed by SubjectDN as Java's X500Principal.getName() does
// (RFC 2253, most specific first, Java's escaping), mapped by
// ssl.principal.mapping.rules (PrincipalMapper: KIP-371 syntax, Java
// replaceAll semantics, Java-only regular expression syntax refused). A
// client whose subject no rule matches is refused, as Kafka refuses it
// (NoMatchingRule). A client without a certificate is User:ANONYMOUS.
//
// # ACL authorization
//
// ACLs is an immutable index of a cluster's ACLs that answers Kafka's
// authorization questions (docs/security.md, "Authorization"):
//
//   - Authorize: may principal, connected from host, perform op on the
//     resource of type typ named name? A super user may do anything. Else
//     the ACLs whose pattern covers the resource count: its LITERAL name,
//     the LITERAL wildcard "*", and every PREFIXED pattern that is a prefix
//     of the name. If none exists, the answer is allow.everyone.if.no.acl.found
//     (AllowIfNoACL). Else a matching DENY (principal equal or User:*, host
//     equal or *, operation equal or ALL) refuses, and otherwise a matching
//     ALLOW permits, where ALLOW of READ, WRITE, DELETE or ALTER implies
//     DESCRIBE, and ALLOW of ALTER_CONFIGS implies DESCRIBE_CONFIGS, as in
//     Kafka. Nothing matching refuses.
//   - AuthorizeAny (KIP-679's authorizeByResourceType): may the principal
//     perform op on at least one resource of the type? Used where Kafka
//     uses it: an idempotent producer needs IDEMPOTENT_WRITE on the cluster
//     or WRITE on some topic.
package auth
