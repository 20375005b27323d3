// Package replica is one partition replica on this broker: its log, its role
// (leader or follower), the leader epoch it acts in, the high watermark, and
// the waiters parked on it (acks=all produces and long-poll fetches).
//
// Ownership: the broker's partition manager is the only caller of the role
// transitions (BecomeLeader, BecomeFollower, Close); request handlers call
// the data-path methods concurrently. Reads of the high watermark and leader
// epoch are atomic snapshots.
//
// High watermark. The leader's high watermark is the minimum, over the ISR,
// of each member's durable log end offset: for the leader itself that is its
// flushed offset when the topic acknowledges only fsync'd data
// (flush.messages=1, samsa's default) and its LEO in page-cache mode. It
// never moves backwards. In a single-broker cluster the ISR is the leader
// alone, so the high watermark follows the leader's own durable LEO.
//
// Leader epochs bind every operation to the role it was started in.
// AppendAsLeader reports the epoch it appended in, and WaitCommitted and
// WaitLocal succeed only while the replica still leads in that epoch (a
// replica that stopped leading, even briefly, may have truncated the batch
// and taken other records at its offsets). The follower's operations carry
// the epoch their fetch was sent in (FetchPosition reads it together with
// the position) and hold followMu from their check to their end; role
// changes take followMu first. ISR changes are proposed on the partition
// epoch of the stored state they were built from (ProposedISR,
// ISRProposalFailed).
package replica
