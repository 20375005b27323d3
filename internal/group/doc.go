// Package group is the group coordinator: Kafka's classic consumer-group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed
// offsets (OffsetCommit, OffsetFetch, OffsetDelete) and the group admin
// APIs (ListGroups, DescribeGroups, DeleteGroups).
//
// # Where groups live
//
// A group belongs to partition PartitionFor(group) of the internal topic
// __consumer_offsets, and its coordinator is that partition's leader. The
// broker tells the Coordinator when it becomes leader of such a partition
// (Elected, with a Store over the local replica) and when it stops
// (Resigned). On election the partition's log is replayed to rebuild its
// groups and offsets; until that is done, requests for its groups get
// COORDINATOR_LOAD_IN_PROGRESS, and requests for groups of partitions not
// led here get NOT_COORDINATOR.
//
// # What is written
//
// Every committed offset and every group's membership (after each
// completed rebalance) is a record in the partition, in Kafka's own
// formats (kmsg.OffsetCommitKey v1 / OffsetCommitValue v3,
// GroupMetadataKey v2 / GroupMetadataValue v3), appended as leader and
// acknowledged only once committed (the high watermark passed it: acks=all
// semantics). A deletion is a tombstone (null value); the topic is
// compacted, so only the latest record per key survives.
//
// # The protocol, briefly
//
// A group is Empty, PreparingRebalance (collecting JoinGroups until every
// known member has rejoined or the rebalance timeout passes),
// CompletingRebalance (the leader computes the assignment and sends it in
// its SyncGroup) or Stable. A member that stops heartbeating for its
// session timeout is removed and the group rebalances. Newer JoinGroup
// versions (4+) first hand a member without an id its id
// (MEMBER_ID_REQUIRED). Static members (group.instance.id) keep their
// place across restarts: a returning static member replaces its old
// member id without a rebalance when nothing else changed.
//
// # Order
//
// Each request takes effect when it arrives (the Start methods) and only
// its answer waits (the returned wait), so the requests of a connection
// take effect in their order. A change is made in memory and appended to
// the partition together, under the coordinator's lock, so memory is
// always the leader's log; commits are awaited by a goroutine per write
// (a tick's or a DeleteGroups' changes of one partition are one write),
// and acknowledged only if committed in the shard's leader epoch. An
// OffsetFetch answers only what is known to be committed.
//
// Timers (session, rebalance and pending-member deadlines, offset expiry)
// are driven by Tick, which the broker calls periodically and which never
// waits for a write; tests call it with their own clock.
package group
