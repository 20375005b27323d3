package group

import (
	"bytes"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// state is a group's place in the classic rebalance protocol.
type state int

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
)

// String is the state's name as DescribeGroups and ListGroups report it.
func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	}
	return "Dead"
}

// protocol is one assignment protocol a member supports, with its
// metadata (for consumers: the subscription).
type protocol struct {
	name     string
	metadata []byte
}

// joinResult answers a waiting JoinGroup.
type joinResult struct {
	code       int16
	generation int32
	protocol   string
	leader     string
	memberID   string
	// members is set for the leader only.
	members []kmsg.JoinGroupResponseMember
}

// syncResult answers a waiting SyncGroup.
type syncResult struct {
	code       int16
	assignment []byte
}

// member is one member of a group.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	protocols            []protocol
	assignment           []byte
	// joined is when it (re)joined: members are ordered by it, and the
	// first becomes leader when there is none.
	joined time.Time
	// awaitingJoin and awaitingSync are set while a JoinGroup or
	// SyncGroup of the member waits for the rebalance; each gets exactly
	// one result.
	awaitingJoin chan joinResult
	awaitingSync chan syncResult
	// deadline is when the member is removed unless it heartbeats.
	deadline time.Time
}

// metadataFor is the member's metadata for the named protocol.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

func (m *member) answerJoin(r joinResult) {
	if m.awaitingJoin != nil {
		m.awaitingJoin <- r
		m.awaitingJoin = nil
	}
}

func (m *member) answerSync(r syncResult) {
	if m.awaitingSync != nil {
		m.awaitingSync <- r
		m.awaitingSync = nil
	}
}

// hasProtocol reports whether protocols include the named one.
func hasProtocol(protocols []protocol, name string) bool {
	return slices.ContainsFunc(protocols, func(p protocol) bool { return p.name == name })
}

// sameProtocols reports whether two protocol lists are equal.
func sameProtocols(a, b []protocol) bool {
	return slices.EqualFunc(a, b, func(x, y protocol) bool { return x.name == y.name && bytes.Equal(x.metadata, y.metadata) })
}

// topicPartition names a partition whose offset a group commits.
type topicPartition struct {
	topic     string
	partition int32
}

// group is one consumer group. Every field is guarded by the
// coordinator's lock.
type group struct {
	id           string
	state        state
	stateSince   time.Time
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	// pending are member ids handed out with MEMBER_ID_REQUIRED, with the
	// time they expire unless the member joins with them.
	pending map[string]time.Time
	// static maps group.instance.id to the member id that holds it.
	static map[string]string
	// rebalanceDeadline ends PreparingRebalance: members that have not
	// rejoined by then are removed.
	rebalanceDeadline time.Time
	// initialDelayUntil holds back the first rebalance of an empty group
	// so that more members can join it (group.initial.rebalance.delay.ms).
	initialDelayUntil time.Time
	offsets           map[topicPartition]Offset
	// pendingTxn holds the offsets committed in open transactions
	// (TxnOffsetCommit), by producer: they take effect when the
	// transaction commits (CompleteTxn) and go when it aborts.
	pendingTxn map[int64]map[topicPartition]Offset
	// persisting is set while a SyncGroup leader's assignment of
	// generation persistingGen is being written.
	persisting    bool
	persistingGen int32
	// expiring is set while a write of expired offsets' tombstones is in
	// flight: the group's next expiry waits for it.
	expiring bool
	// stored tells whether the group's latest metadata record appended (or
	// loaded) is a value, not a tombstone or missing.
	stored bool
	// metaSeq numbers the attempts to write the group's metadata, refused
	// ones included; metaWriting counts those in flight; metaDirty is set
	// while memory's membership may not be the log's (the latest attempt
	// failed or was refused), until the latest attempt commits.
	metaSeq     int64
	metaWriting int
	metaDirty   bool
}

func newGroup(id string, now time.Time) *group {
	return &group{id: id, stateSince: now, members: map[string]*member{}, pending: map[string]time.Time{},
		static: map[string]string{}, offsets: map[topicPartition]Offset{}}
}

// addPendingTxn records an offset committed in producer pid's open
// transaction.
func (g *group) addPendingTxn(pid int64, tp topicPartition, o Offset) {
	if g.pendingTxn == nil {
		g.pendingTxn = map[int64]map[topicPartition]Offset{}
	}
	if g.pendingTxn[pid] == nil {
		g.pendingTxn[pid] = map[topicPartition]Offset{}
	}
	g.pendingTxn[pid][tp] = o
}

// dropPendingTxn forgets the offsets of tp pending in transactions (its
// committed offset was deleted).
func (g *group) dropPendingTxn(tp topicPartition) {
	for pid, offs := range g.pendingTxn {
		delete(offs, tp)
		if len(offs) == 0 {
			delete(g.pendingTxn, pid)
		}
	}
}

// pendingIn reports whether an open transaction has an offset of tp.
func (g *group) pendingIn(tp topicPartition) bool {
	for _, offs := range g.pendingTxn {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}

// completeTxn ends producer pid's transaction as of the marker at
// markerOffset: its offsets written before the marker take effect if it
// committed (unless a later plain commit of the partition superseded
// them), or go.
func (g *group) completeTxn(pid int64, commit bool, markerOffset int64) {
	offs := g.pendingTxn[pid]
	for tp, o := range offs {
		if o.end > markerOffset {
			continue // a later transaction's
		}
		delete(offs, tp)
		if commit {
			if cur, ok := g.offsets[tp]; !ok || cur.end < o.end {
				g.offsets[tp] = o
			}
		}
	}
	if len(offs) == 0 {
		delete(g.pendingTxn, pid)
	}
}

func (g *group) setState(s state, now time.Time) {
	g.state, g.stateSince = s, now
}

// memberOrder returns member ids in join order.
func (g *group) memberOrder() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := g.members[a].joined.Compare(g.members[b].joined); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a), []byte(b))
	})
	return ids
}

// supports reports whether a member with these protocols can be in the
// group: every other member (all but except) supports one of them, under
// the same protocol type.
func (g *group) supports(protocolType string, protocols []protocol, except string) bool {
	others := 0
	for id := range g.members {
		if id != except {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		all := true
		for id, m := range g.members {
			if id != except && !slices.ContainsFunc(m.protocols, func(q protocol) bool { return q.name == p.name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol for a new generation: among those
// every member supports, the one most members list first (Kafka's vote).
func (g *group) selectProtocol() string {
	order := g.memberOrder()
	var candidates []string
	first := g.members[order[0]]
	for _, p := range first.protocols {
		all := true
		for _, id := range order[1:] {
			if !slices.ContainsFunc(g.members[id].protocols, func(q protocol) bool { return q.name == p.name }) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.name)
		}
	}
	best, bestVotes := "", -1
	for _, c := range candidates {
		votes := 0
		for _, id := range order {
			for _, p := range g.members[id].protocols {
				if slices.Contains(candidates, p.name) {
					if p.name == c {
						votes++
					}
					break
				}
			}
		}
		if votes > bestVotes {
			best, bestVotes = c, votes
		}
	}
	return best
}

// prepareRebalance moves the group to PreparingRebalance: pending
// SyncGroups are told to rejoin, and members get until the longest
// rebalance timeout to do so.
func (g *group) prepareRebalance(now time.Time) {
	if g.state == statePreparingRebalance {
		return
	}
	for _, m := range g.members {
		m.answerSync(syncResult{code: kerr.RebalanceInProgress.Code})
		m.assignment = nil
	}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	g.rebalanceDeadline = now.Add(timeout)
	g.setState(statePreparingRebalance, now)
}

// allJoined reports whether every member has rejoined and no handed-out
// member id is still expected.
func (g *group) allJoined() bool {
	for _, m := range g.members {
		if m.awaitingJoin == nil {
			return false
		}
	}
	return len(g.pending) == 0
}

// completeJoin ends PreparingRebalance: members that did not rejoin are
// removed, the generation advances, and every waiting JoinGroup is
// answered (the leader with the members' metadata). It reports whether
// the group must be persisted (it became Empty).
func (g *group) completeJoin(now time.Time) (persist bool) {
	for id, m := range g.members {
		if m.awaitingJoin == nil {
			g.removeMember(id)
		}
	}
	clear(g.pending)
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.setState(stateEmpty, now)
		return true
	}
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.memberOrder()[0]
	}
	g.setState(stateCompletingRebalance, now)
	all := g.joinMembers()
	for id, m := range g.members {
		r := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader, memberID: id}
		if id == g.leader {
			r.members = all
		}
		m.answerJoin(r)
		m.deadline = now.Add(m.sessionTimeout)
	}
	return false
}

// joinMembers is the member list a JoinGroup leader gets: every member's
// id, instance id and metadata for the group's protocol, in join order.
func (g *group) joinMembers() []kmsg.JoinGroupResponseMember {
	var all []kmsg.JoinGroupResponseMember
	for _, id := range g.memberOrder() {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.ProtocolMetadata = m.id, m.metadataFor(g.protocol)
		if m.instanceID != "" {
			jm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		all = append(all, jm)
	}
	return all
}

// removeMember drops a member and whatever it holds.
func (g *group) removeMember(id string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	m.answerJoin(joinResult{code: kerr.UnknownMemberID.Code, memberID: id, generation: -1})
	m.answerSync(syncResult{code: kerr.UnknownMemberID.Code})
	delete(g.members, id)
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
	}
}

// memberLeft reacts to members leaving or expiring: a settled group
// rebalances, one rebalancing may now be complete.
func (g *group) memberLeft(now time.Time) (persist bool) {
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalance(now)
		if len(g.members) == 0 {
			return g.completeJoin(now)
		}
	case statePreparingRebalance:
		if g.allJoined() && now.After(g.initialDelayUntil) {
			return g.completeJoin(now)
		}
	}
	return false
}

// subscribedTopics is the union of the topics the members subscribe to,
// for the consumer protocol; ok is false if it cannot be known.
func (g *group) subscribedTopics() (topics map[string]bool, ok bool) {
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil, len(g.members) == 0
	}
	topics = map[string]bool{}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics, true
}
