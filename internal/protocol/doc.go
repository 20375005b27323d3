// Package protocol is samsa's Kafka wire-protocol server: listeners,
// per-connection read and write goroutines, framing, size limits, request
// header parsing, kmsg decoding and encoding, and responses in request
// order. It knows nothing of topics or partitions; a Handler (the broker)
// answers the decoded requests.
//
// # Framing
//
// Every request and response is a frame: a big-endian int32 size, then that
// many bytes. A request frame holds a request header and the body:
//
//	header v1: api_key int16, api_version int16, correlation_id int32,
//	           client_id nullable string (int16 length, -1 = null)
//	header v2: header v1, then a tagged-field section
//
// Header v2 is used exactly when the request version is flexible (KIP-482,
// kmsg's IsFlexible); client_id stays a non-compact string even then. The
// header's tagged fields are skipped. A response frame holds the
// correlation id, then, for flexible responses, an empty tagged-field
// section, then the body; ApiVersions responses never have that section,
// whatever their version, so that a client can read them before it knows
// what the broker supports.
//
// AppendRequest, ReadResponse and DecodeResponse are the client side of the
// same framing, for tests and tools that talk to a broker over a raw socket.
//
// # Ordering
//
// Each connection has one read goroutine and one write goroutine. The reader
// decodes requests and calls Handler.Handle for them one at a time, in
// arrival order, so the side effects of one connection's requests happen in
// the order the client sent them. Responses are written strictly in request
// order: a response that must wait (Response.Later) holds back the responses
// to later requests on the same connection, however soon those are ready.
// Ready responses that follow each other are coalesced into one write.
// Response.NoResponse (Produce with acks=0) writes nothing but keeps its
// place in the order (its Later still runs); Response.Close closes the
// connection once this and all earlier responses are written, and no later
// request is handled. Response.Mute (a long poll: a parked fetch) stops the
// reader until its Later has returned, so nothing a client pipelines behind
// a long poll is handled, or held in memory unwritable, while it waits
// (Kafka mutes every connection until its response is sent; samsa does so
// only behind long polls and pipelines everything else). A muted reader
// still notices the client closing (unless the client has filled the read
// buffer with requests pipelined behind the poll): the long poll's
// context is cancelled and its bytes given back at once.
//
// # Limits
//
//   - A size prefix that is negative or above Config.MaxRequestBytes
//     (socket.request.max.bytes, 100 MiB by default) closes the connection
//     before anything is allocated; so does a frame shorter than a v1
//     header (10 bytes). Each request gets a buffer of its own, never
//     reused, because the decoded body aliases it (Produce records, SASL
//     bytes) and a handler may keep it. A frame of up to 64 KiB is read
//     into one buffer of its size when its bytes have arrived, else into
//     one that starts at 4 KiB and doubles as they do; a larger one's
//     buffer starts at 64 KiB and doubles as its bytes arrive, so a client
//     that claims 100 MB and sends them slowly (or never) holds what it
//     has sent, not 100 MB. A connection with nothing to write keeps no
//     write buffer over 64 KiB.
//   - Every request but Produce is further capped at
//     Config.MaxNonProduceRequestBytes (16 MiB): its API key is peeked
//     before the body is read, and a larger frame closes the connection.
//     Only Produce carries bulk data, and its records stay bytes aliasing
//     the frame; the other requests decode into Go structures of up to
//     tens of times their wire size (below), which this cap bounds.
//   - Config.MaxInFlight (100) bounds the queue of a connection's requests
//     that are handled but not yet answered; with the one being written and
//     the one just handled, at most MaxInFlight+2 are pending. When the
//     queue is full the reader stops reading and TCP flow control pushes
//     back on the client.
//   - Memory, server-wide and per connection: see "Memory budget" below.
//   - Config.IdleTimeout (connections.max.idle.ms, 10 minutes) closes a
//     connection that starts no request for that long, or whose client
//     takes longer than that to send the rest of a frame after its size
//     prefix. Config.StallTimeout (10 s) closes sooner a connection whose
//     large frame stalls while others wait for the memory budget (below).
//     Config.WriteTimeout (30 s) bounds every write, closing a
//     connection whose client stops reading responses.
//   - Config.MaxConnections (max.connections) closes new connections beyond
//     it at once, and so do Config.MaxConnectionsPerIP
//     (max.connections.per.ip) and its per-address overrides for the
//     connections of one remote IP address; all unlimited by default, as in
//     Kafka. Unlike Kafka's (KIP-402, which exempts the inter-broker
//     listener), max.connections makes no exception for other brokers: a
//     limit that clients reach refuses followers' connections too.
//
// # Memory budget
//
// A client that pipelines fetches and never reads the responses, or that
// opens many connections and sends large frames slowly, must not be able
// to make the broker hold unbounded memory (issue 16: ten such connections
// once took a broker from 100 MiB to 6.7 GiB in seconds, and it lost its
// etcd session). Three limits bound what the request path holds:
//
//   - The server-wide Budget (Config.QueuedMaxBytes,
//     queued.max.request.bytes, 128 MiB by default; Kafka's is unlimited,
//     and in Kafka it covers only request frames, since Kafka sends fetched
//     records from the page cache). It counts the bytes of every request
//     frame from the moment they are read until the request's response is
//     written (a produce frame's records may be kept by the handler that
//     long), the encoded size of every response that is ready when its
//     request is handled (the reader encodes it at once and drops the
//     decoded one, so a Metadata response thousands of times its request
//     is counted; a Later response is encoded by the writer when it is
//     ready, and written before the next is encoded), and what handlers
//     take through Server.Budget
//     (the broker's produce validation takes its decompression buffers from
//     it). A connection's reader waits for room before it grows a frame
//     beyond 64 KiB; smaller frames are counted but never wait, so that the
//     small requests other work depends on (a follower's fetch that an
//     acks=all produce is waiting for, a heartbeat) are never stuck behind
//     bulk data. The parts of a RawResponse (a fetch's records, sent from
//     the segment files) are not in memory and not counted, as in Kafka.
//   - Config.MaxQueuedBytesPerConnection (queued.max.connection.bytes,
//     16 MiB): a connection's reader stops reading while the connection's
//     unanswered requests and their encoded responses hold this much or
//     more, and resumes as its writer writes them. This is Kafka's muting
//     (Kafka reads no further request from a connection until it has sent
//     the response to the last one) in bytes: a client that reads its
//     responses keeps its pipelining, one that does not is pushed back by
//     TCP flow control after at most this much, plus one response.
//   - The count bound, MaxInFlight, as before.
//
// Bytes are released when the response that held them has been written to
// the socket (not when it is encoded: until then the encoded response is
// in memory), or when the connection closes. The writer drops each decoded
// response once encoded, so a response is in memory once, not twice.
//
// The budget never deadlocks: only readers wait on it, and only while
// growing a frame. Everything they wait for is released by writers, which
// never wait on the budget, or by a handler's own progress; handlers take
// what is free or are charged beyond the limit (an encoded response),
// never wait. Two cases would otherwise wait for ever, and are
// let through: a single item larger than the whole budget passes when
// nothing else is in use; and when every byte in use belongs to the
// partial frames of readers that are all waiting for more, to small
// frames (under 64 KiB: a parked long poll's, the pipelined requests of a
// client that reads nothing, which are released on no schedule), or, for
// a waiting request other than Produce, to Produce frames whose requests
// wait in a Later (an acks=all produce may be waiting for a follower's
// fetch of over 64 KiB that waits for room), one of the waiting readers
// (the overdraft reader) finishes its frame over the budget while the
// others go on waiting; a frame so read is not counted as stuck, so the
// next waits for it. The overdraft is also given when a reader has waited
// a second (overdraftPatience) and what earlier overdraft readers took
// beyond the limit has been given back, so that bytes released on a slow
// schedule (responses to a client that reads slowly) do not keep a frame
// waiting. A request other than Produce that got the overdraft and then
// waits in a Later (a long poll, a SyncGroup) no longer counts as
// overdrawn: it waits for as long as its client likes, and is held like a
// small frame. So the request path holds at most QueuedMaxBytes, plus one
// frame (two when a parked acks=all produce read over the budget is
// joined by another request's frame beside it), plus what does not wait
// (frames under 64 KiB and parked requests read over the budget, at most
// MaxQueuedBytesPerConnection per connection; one large decompression over the budget at a time
// and small ones of up to 256 KiB, in internal/records).
//
// No client keeps others waiting for long. The overdraft goes to the
// waiting reader with the fewest bytes of its frame left to read, each
// second waited counting as 1 MiB fewer, so a normal produce goes before
// a 100 MB frame, and a stream of small frames does not pass it for ever. While any reader waits for
// room, a large frame must fill each step of its buffer (a doubling)
// within Config.StallTimeout (10 s) of being granted it, that is send
// about as many bytes per StallTimeout as it holds, and the overdraft
// reader must send the rest of its frame at a pace that finishes it
// within StallTimeout of getting the overdraft (checked every tenth of
// it); otherwise its connection is closed, giving its bytes back. Time
// spent waiting for the budget is not held against a client.
//
// Large frames are not only bulk produce: a follower's Fetch v12 of more
// than about 2,000 partitions, a SyncGroup of a large group, a Metadata
// request naming thousands of topics are over 64 KiB and wait for room
// like any; what they wait for is written responses, handlers finishing,
// slow clients to be closed, or the overdraft. Followers get no headroom
// of their own (Kafka's memory pool has none either). Go's garbage
// collector lets the heap grow to about twice what is live (GOGC=100)
// before it collects; the hostile test (test/badinput_memory_test.go)
// measures a peak heap of about 2.5 times the budget under attack.
//
// # Errors
//
// Kafka closes a connection when it cannot make sense of a request; so does
// this package, logging the reason at debug level:
//
//   - a frame size out of range or too short for a header;
//   - an API key unknown to kmsg or to Config.Versions, or a version outside
//     the supported range;
//   - a header or body that does not decode (bytes after a body's last
//     field are ignored, as Kafka's generated readers ignore them: clients
//     send some, librdkafka 2.1+ in Metadata for all topics, kafka-go in
//     DescribeAcls v2+);
//   - a handler panic (logged at error level with the stack), a missing
//     response, or a response for another API key.
//
// Config.Versions decides which keys are decoded, not which are
// advertised: the broker's also covers the APIs it does not serve but
// answers with an error response rather than a closed connection, since a
// client that skips or ignores ApiVersions (kafka-go) would otherwise see
// only EOF; ApiVersions, built by the broker, leaves them out
// (internal/broker/unserved.go).
//
// Requests handled before the bad one are still answered before the
// connection closes. An I/O error (the client went away, a timeout) closes
// the connection at once and cancels the context of its pending requests.
//
// The one exception is ApiVersions (key 18) at a version above the
// supported range: Kafka answers it so that clients can downgrade (KIP-511).
// The handler then gets a Request with Version 0, an empty v0 body and
// UnsupportedVersion set to the version asked for; only the header's fixed
// fields and client id are parsed. It should answer with ErrorCode
// UNSUPPORTED_VERSION (35) and, as Kafka does, ApiVersions' own range; the
// response is encoded as v0. ApiVersions below the range closes the
// connection like any other unsupported version.
//
// # Hostile length prefixes
//
// kmsg (v1.15.1) decodes with kbin.Reader; its source was read for what a
// length prefix can make it allocate:
//
//   - Strings and byte arrays go through Reader.Span, which fails unless the
//     length is between 0 and the bytes remaining. Bytes are sub-slices of
//     the frame; strings are copied (this package uses ReadFrom, not
//     UnsafeReadFrom, so that a topic name kept in a map does not pin a
//     whole frame), so both cost at most the frame's size.
//   - Every array length is rejected when it exceeds the bytes remaining
//     (Reader.ArrayLen and its compact and varint forms: each element takes
//     at least one byte). Of the 449 arrays kmsg preallocates with
//     make([]T, n), 404 (all arrays of structs) are further rejected when n
//     times the element's minimum encoded size exceeds the bytes remaining;
//     the other 45 are arrays of strings or int8, bounded by the one-byte
//     rule.
//   - Tagged-field sections loop over a uvarint count but stop at the first
//     failed read, and each value is a Span.
//
// So nothing is allocated for a claimed length larger than the frame: a
// Metadata request claiming 2^31-1 topics in a 30-byte frame fails having
// allocated under a kilobyte. No pre-check was needed; this package adds
// the frame-size checks before allocation, the minimum-header check, a
// recover around decoding, and tests that pin the bounds. What remains is the ratio of a decoded request's Go size to its
// wire size, which decoding into Go structs cannot avoid.
// TestDecodeAllocationBounded measures it on 256 KiB frames built to
// maximise it: about 42x for distinct unknown tags (a map entry for three or
// four wire bytes), 25x for Metadata v9 with empty topic names (a struct and
// a *string for two bytes), 17x for an array of empty compact strings (a
// 16-byte string header for one byte), 3x for a Fetch with many partitions.
// These figures were taken without the race detector, and include a
// re-encoding of each request (1x) that the decoder no longer does;
// FuzzDecodeRequest fails any input that exceeds 64x.
// Decoded requests are released once answered, so what one connection can
// hold is bounded by about (MaxInFlight+2) x MaxNonProduceRequestBytes x 45
// for those requests, and by (MaxInFlight+2) x MaxRequestBytes x ~8 for
// Produce (a partition entry decodes to a few tens of bytes for at least
// ten on the wire; the records are not decoded); a broker that wants a
// tighter bound lowers those limits or MaxInFlight. The frames themselves
// count against the memory budget (above), so a connection's unanswered
// requests also decode to at most about 45 x MaxQueuedBytesPerConnection
// (plus one frame); their decoded form is not counted in the budget.
//
// # Goroutines and shutdown
//
// Handle's context is cancelled when its connection closes or the server
// stops. Later runs on the write goroutine and must return once that
// context is done; the writer calls no further Later after it, but cannot
// interrupt one that ignores it, and Server.Close waits for every
// connection goroutine, Later calls included. A connection's read goroutine
// owns it: it starts the write goroutine, waits for it, and then removes the
// connection from the server.
package protocol
