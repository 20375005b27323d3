package group

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/records"
)

// StartJoin handles a JoinGroup request: it takes effect at once, and the
// returned wait answers it once the rebalance it joins completes (or its
// ctx is done). clientID and clientHost identify the connection.
//
// Every Start method works this way: the broker calls it as the request
// arrives and calls the wait later, so that the requests of a connection
// take effect in their order (a commit and a pipelined OffsetFetch or
// LeaveGroup). Waits may be called in any order, or never.
func (c *Coordinator) StartJoin(req *kmsg.JoinGroupRequest, clientID, clientHost string) func(context.Context) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation, resp.MemberID = -1, req.MemberID
	fail := func(code int16) func(context.Context) *kmsg.JoinGroupResponse {
		resp.ErrorCode = code
		return answered(resp)
	}
	instance := ""
	if req.InstanceID != nil {
		instance = *req.InstanceID
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := session
	if req.Version >= 1 {
		rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	// As Kafka: the group id and the coordinator first, then the
	// request's own fields (kafka-go's suite joins with neither a group
	// id nor a session timeout and wants INVALID_GROUP_ID).
	c.mu.Lock()
	_, code := c.lookupLocked(req.Group, false)
	c.mu.Unlock()
	if code != 0 {
		return fail(code)
	}
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout.Code)
	}
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	// Strings that the group's metadata record could not hold (see
	// maxRecordString) are refused before anything changes; a member id
	// other than one handed out here is unknown anyway.
	tooLong := len(instance) > maxRecordString || len(req.ProtocolType) > maxRecordString ||
		len(clientID) > maxRecordString || len(clientHost) > maxRecordString
	for _, p := range req.Protocols {
		tooLong = tooLong || len(p.Name) > maxRecordString
	}
	if tooLong {
		return fail(kerr.InvalidRequest.Code)
	}
	protocols := make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		protocols[i] = protocol{p.Name, p.Metadata}
	}

	c.mu.Lock()
	sh, code := c.lookupLocked(req.Group, false)
	if code != 0 {
		c.mu.Unlock()
		return fail(code)
	}
	now := c.cfg.Now()
	g := sh.groups[req.Group]
	if g == nil {
		g = newGroup(req.Group, now)
		sh.groups[req.Group] = g
	}
	id := req.MemberID
	if id == "" && !g.supports(req.ProtocolType, protocols, g.static[instance]) {
		// As Kafka: checked before a member id is handed out (a pending id
		// holds up rebalances) and before a static member's old id is
		// replaced (compared with the other members).
		c.mu.Unlock()
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	var m *member
	switch {
	case id == "" && instance != "":
		// A static member (re)joining: it takes over its instance's place.
		id = newMemberID(instance)
		if old, ok := g.static[instance]; ok {
			om := g.members[old]
			wasLeader := old == g.leader
			if om != nil && g.state == stateStable && req.ProtocolType == g.protocolType && hasProtocol(protocols, g.protocol) {
				// Still supports the group's protocol: no rebalance, as
				// in Kafka (its metadata may differ: a restarted
				// cooperative consumer owns nothing yet). The returning
				// member gets the current generation and, in its
				// SyncGroup, its old assignment. A returning leader is
				// told it leads, with the members, but that the
				// assignment stands (KIP-814's SkipAssignment, v9);
				// before v9 it is told the id it replaced leads, so
				// that it does not assign (Kafka's
				// GroupCoordinator.updateStaticMemberAndRebalance).
				om.answerJoin(joinResult{code: kerr.FencedInstanceID.Code, memberID: old, generation: -1})
				om.answerSync(syncResult{code: kerr.FencedInstanceID.Code})
				w, code := c.replaceStaticLocked(sh, g, om, id, clientID, clientHost, session, rebalance, protocols, now)
				if code != 0 {
					c.mu.Unlock()
					return fail(groupWriteCode(code))
				}
				resp.Generation, resp.Protocol, resp.ProtocolType = g.generation, kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.protocolType)
				resp.LeaderID, resp.MemberID = g.leader, id
				switch {
				case wasLeader && req.Version >= 9:
					resp.SkipAssignment, resp.Members = true, g.joinMembers()
				case wasLeader:
					resp.LeaderID = old
				}
				c.mu.Unlock()
				return func(ctx context.Context) *kmsg.JoinGroupResponse {
					if code := await(ctx, w); code != 0 {
						resp.SkipAssignment, resp.Members, resp.Protocol, resp.ProtocolType, resp.LeaderID = false, nil, nil, nil, ""
						resp.Generation, resp.MemberID, resp.ErrorCode = -1, req.MemberID, groupWriteCode(code)
					}
					return resp
				}
			}
			if om != nil {
				g.removeMember(old)
			}
		}
	case id == "" && req.Version >= 4:
		// KIP-394: hand out the id first; the member joins with it.
		id = newMemberID(clientID)
		g.pending[id] = now.Add(session)
		c.mu.Unlock()
		resp.MemberID = id
		return fail(kerr.MemberIDRequired.Code)
	case id == "":
		id = newMemberID(clientID)
	default:
		if instance != "" && g.static[instance] != "" && g.static[instance] != id {
			c.mu.Unlock()
			return fail(kerr.FencedInstanceID.Code)
		}
		m = g.members[id]
		if m == nil {
			if _, ok := g.pending[id]; !ok {
				c.mu.Unlock()
				return fail(kerr.UnknownMemberID.Code)
			}
		}
	}
	if !g.supports(req.ProtocolType, protocols, id) {
		c.mu.Unlock()
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	delete(g.pending, id)
	changed := m == nil || !sameProtocols(m.protocols, protocols)
	if m == nil {
		m = &member{id: id, instanceID: instance, joined: now}
		g.members[id] = m
		if instance != "" {
			g.static[instance] = id
		}
	}
	m.clientID, m.clientHost = clientID, clientHost
	m.sessionTimeout, m.rebalanceTimeout, m.protocols = session, rebalance, protocols
	m.deadline = now.Add(session)
	if len(g.members) == 1 {
		g.protocolType = req.ProtocolType
	}
	if m.awaitingJoin != nil {
		// A retried JoinGroup replaces the one still waiting.
		m.answerJoin(joinResult{code: kerr.RebalanceInProgress.Code, memberID: id, generation: -1})
	}
	wait := make(chan joinResult, 1)
	m.awaitingJoin = wait
	var persist bool
	switch g.state {
	case stateEmpty:
		g.prepareRebalance(now)
		g.initialDelayUntil = now.Add(c.cfg.InitialRebalanceDelay)
		g.rebalanceDeadline = now.Add(max(c.cfg.InitialRebalanceDelay, 0))
		if c.cfg.InitialRebalanceDelay <= 0 && g.allJoined() {
			persist = g.completeJoin(now)
		}
	case stateStable, stateCompletingRebalance:
		if changed || id == g.leader || g.state == stateCompletingRebalance {
			g.prepareRebalance(now)
			if g.allJoined() {
				persist = g.completeJoin(now)
			}
		} else {
			// A known member rejoining with nothing new: it gets the
			// current generation back without a rebalance.
			r := joinResult{generation: g.generation, protocol: g.protocol, leader: g.leader, memberID: id}
			m.answerJoin(r)
		}
	case statePreparingRebalance:
		if g.initialDelayUntil.After(now) {
			// More members are joining an empty group: wait a little
			// longer, but (as Kafka's InitialDelayedJoin) no longer in
			// all than the rebalance timeout since the rebalance began.
			limit := c.cfg.InitialRebalanceDelay
			for _, gm := range g.members {
				limit = max(limit, gm.rebalanceTimeout)
			}
			g.initialDelayUntil = minTime(now.Add(c.cfg.InitialRebalanceDelay), g.stateSince.Add(limit))
			g.rebalanceDeadline = maxTime(g.rebalanceDeadline, g.initialDelayUntil)
		} else if g.allJoined() {
			persist = g.completeJoin(now)
		}
	}
	if persist {
		c.persistLocked(sh, g)
	}
	c.mu.Unlock()

	return func(ctx context.Context) *kmsg.JoinGroupResponse {
		select {
		case r := <-wait:
			resp.ErrorCode, resp.Generation, resp.MemberID = r.code, r.generation, r.memberID
			if r.code == 0 {
				resp.Protocol, resp.ProtocolType = kmsg.StringPtr(r.protocol), kmsg.StringPtr(req.ProtocolType)
				resp.LeaderID, resp.Members = r.leader, r.members
			}
		case <-ctx.Done():
			resp.ErrorCode = kerr.RebalanceInProgress.Code
		}
		return resp
	}
}

// answered is the wait of a request answered at once.
func answered[R any](resp R) func(context.Context) R {
	return func(context.Context) R { return resp }
}

// replaceStaticLocked hands static member om's place to its returning
// instance under the new member id (no rebalance) and writes the group's
// metadata. If the write is refused the replacement is undone at once; if
// it fails later, it is undone then, as Kafka does, unless the group has
// moved on (a rebalance, another replacement), and the restored
// membership is written too, so that memory and the log agree: the
// replaced member id is valid again, the new one unknown.
func (c *Coordinator) replaceStaticLocked(sh *shard, g *group, om *member, id, clientID, clientHost string,
	session, rebalance time.Duration, protocols []protocol, now time.Time) (*write, int16) {
	prev := *om
	instance, gen, wasLeader := om.instanceID, g.generation, om.id == g.leader
	delete(g.members, prev.id)
	om.id, om.clientID, om.clientHost = id, clientID, clientHost
	om.sessionTimeout, om.rebalanceTimeout, om.protocols = session, rebalance, protocols
	om.deadline = now.Add(session)
	g.members[id], g.static[instance] = om, id
	if wasLeader {
		g.leader = id
	}
	revert := func() bool {
		if sh.groups[g.id] != g || g.members[id] != om || g.static[instance] != id || g.generation != gen || g.state != stateStable {
			return false
		}
		delete(g.members, id)
		om.id, om.clientID, om.clientHost = prev.id, prev.clientID, prev.clientHost
		om.sessionTimeout, om.rebalanceTimeout, om.protocols = prev.sessionTimeout, prev.rebalanceTimeout, prev.protocols
		g.members[prev.id], g.static[instance] = om, prev.id
		if g.leader == id {
			g.leader = prev.id
		}
		return true
	}
	prevDirty, prevSeq := g.metaDirty, g.metaSeq
	w, code := c.writeGroupLocked(sh, g, func(code int16) {
		// A revert whose own write is refused or fails leaves the group
		// dirty: Tick writes it again until memory and the log agree.
		if code != 0 && c.currentLocked(sh) && revert() {
			c.persistLocked(sh, g)
		}
	})
	if code != 0 {
		// Nothing was written: memory is as before.
		revert()
		g.metaDirty, g.metaSeq = prevDirty, prevSeq
	}
	return w, code
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// anyGeneration tells memberLocked not to check the generation.
const anyGeneration = math.MinInt32

// memberLocked finds a group member for a request, checking its
// instance id, and the request's generation unless gen is anyGeneration:
// as Kafka's ClassicGroup, a member's request carrying another generation,
// -1 included, is ILLEGAL_GENERATION.
func memberLocked(g *group, memberID string, instance *string, gen int32) (*member, int16) {
	if g == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	if instance != nil && *instance != "" {
		if held, ok := g.static[*instance]; ok && held != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m := g.members[memberID]
	if m == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	if gen != anyGeneration && gen != g.generation {
		return m, kerr.IllegalGeneration.Code
	}
	return m, 0
}

// StartSync handles a SyncGroup request; the wait of a follower's answers
// once the leader's assignment is written, the leader's once its own
// write is committed.
func (c *Coordinator) StartSync(req *kmsg.SyncGroupRequest) func(context.Context) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fail := func(code int16) func(context.Context) *kmsg.SyncGroupResponse {
		resp.ErrorCode = code
		return answered(resp)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(req.Group, false)
	if code != 0 {
		return fail(code)
	}
	g := sh.groups[req.Group]
	m, code := memberLocked(g, req.MemberID, req.InstanceID, req.Generation)
	if code == 0 && (req.ProtocolType != nil && *req.ProtocolType != g.protocolType || req.Protocol != nil && *req.Protocol != g.protocol) {
		code = kerr.InconsistentGroupProtocol.Code
	}
	if code != 0 {
		return fail(code)
	}
	now := c.cfg.Now()
	m.deadline = now.Add(m.sessionTimeout)
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	switch g.state {
	case statePreparingRebalance, stateEmpty:
		return fail(kerr.RebalanceInProgress.Code)
	case stateStable:
		resp.MemberAssignment = m.assignment
		return answered(resp)
	}
	// CompletingRebalance.
	wait := make(chan syncResult, 1)
	m.answerSync(syncResult{code: kerr.RebalanceInProgress.Code})
	m.awaitingSync = wait
	if m.id == g.leader && !(g.persisting && g.persistingGen == g.generation) {
		assignments := map[string][]byte{}
		for _, a := range req.GroupAssignment {
			assignments[a.MemberID] = a.MemberAssignment
		}
		gen := g.generation
		for id, gm := range g.members {
			gm.assignment = assignments[id]
		}
		g.persisting, g.persistingGen = true, gen
		// complete ends the rebalance once the assignment is written: the
		// members get it, or all rejoin if the write failed.
		complete := func(code int16) {
			if g.persistingGen == gen {
				g.persisting = false
			}
			if !c.currentLocked(sh) || sh.groups[g.id] != g || g.generation != gen || g.state != stateCompletingRebalance {
				return
			}
			if code == 0 {
				g.setState(stateStable, c.cfg.Now())
				for _, gm := range g.members {
					gm.answerSync(syncResult{assignment: gm.assignment})
				}
				return
			}
			for _, gm := range g.members {
				gm.answerSync(syncResult{code: code})
			}
			g.prepareRebalance(c.cfg.Now())
		}
		if _, code := c.writeGroupLocked(sh, g, func(code int16) { complete(groupWriteCode(code)) }); code != 0 {
			complete(groupWriteCode(code))
		}
	}
	return func(ctx context.Context) *kmsg.SyncGroupResponse {
		select {
		case r := <-wait:
			resp.ErrorCode, resp.MemberAssignment = r.code, r.assignment
		case <-ctx.Done():
			resp.ErrorCode = kerr.RebalanceInProgress.Code
		}
		return resp
	}
}

// Heartbeat handles a Heartbeat request.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(req.Group, false)
	if code == kerr.CoordinatorLoadInProgress.Code {
		// As Kafka's GroupCoordinatorService.heartbeat: "the group is
		// still loading, so blindly respond", and the member stays.
		code = 0
	}
	if code != 0 || sh == nil {
		resp.ErrorCode = code
		return resp
	}
	g := sh.groups[req.Group]
	m, code := memberLocked(g, req.MemberID, req.InstanceID, req.Generation)
	if m != nil {
		m.deadline = c.cfg.Now().Add(m.sessionTimeout)
	}
	if code == 0 && g.state == statePreparingRebalance {
		code = kerr.RebalanceInProgress.Code
	}
	resp.ErrorCode = code
	return resp
}

// Leave handles a LeaveGroup request (one member before v3, a batch of
// members identified by member or instance id from v3).
func (c *Coordinator) Leave(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(req.Group, false)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	g := sh.groups[req.Group]
	leaving := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		leaving = []kmsg.LeaveGroupRequestMember{lm}
	}
	left := false
	for _, lm := range leaving {
		id := lm.MemberID
		if lm.InstanceID != nil && id == "" && g != nil {
			id = g.static[*lm.InstanceID]
		}
		_, mcode := memberLocked(g, id, lm.InstanceID, anyGeneration)
		if mcode == 0 {
			g.removeMember(id)
			left = true
		}
		if req.Version < 3 {
			resp.ErrorCode = mcode
			continue
		}
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, mcode
		resp.Members = append(resp.Members, rm)
	}
	if left && g.memberLeft(c.cfg.Now()) {
		c.persistLocked(sh, g)
	}
	return resp
}

// StartCommitOffsets handles an OffsetCommit request: the offsets are
// appended and take effect at once (a later OffsetFetch reads them, after
// waiting for their commit), and the wait answers once they are committed.
func (c *Coordinator) StartCommitOffsets(req *kmsg.OffsetCommitRequest) func(context.Context) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	setAll := func(code int16) *kmsg.OffsetCommitResponse {
		resp.Topics = resp.Topics[:0]
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				if code == 0 {
					rp.ErrorCode = c.commitCode(t.Topic, p.Metadata)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(req.Group, true)
	if code != 0 {
		return answered(setAll(code))
	}
	now := c.cfg.Now()
	g := sh.groups[req.Group]
	switch {
	case req.Generation < 0 && (g == nil || g.state == stateEmpty):
		// A simple commit: the group uses no group management (or is
		// empty), as Kafka allows for assign()-ing consumers and tools
		// (ClassicGroup.validateOffsetCommit, whatever the member id).
	case g == nil:
		// A generation of a group that does not exist: Kafka's
		// OffsetMetadataManager.validateOffsetCommit answers
		// ILLEGAL_GENERATION before v9 (GROUP_ID_NOT_FOUND from v9).
		return answered(setAll(kerr.IllegalGeneration.Code))
	default:
		m, mcode := memberLocked(g, req.MemberID, req.InstanceID, req.Generation)
		if mcode == 0 && g.state == stateCompletingRebalance {
			mcode = kerr.RebalanceInProgress.Code
		}
		if mcode != 0 {
			return answered(setAll(mcode))
		}
		m.deadline = now.Add(m.sessionTimeout)
	}
	ts := now.UnixMilli()
	type commit struct {
		tp topicPartition
		o  Offset
	}
	var commits []commit
	size := 0
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if c.commitCode(t.Topic, p.Metadata) != 0 {
				continue
			}
			meta := ""
			if p.Metadata != nil {
				meta = *p.Metadata
			}
			o := Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: meta, CommitTimestamp: ts}
			if req.Version < 6 {
				o.LeaderEpoch = -1
			}
			commits = append(commits, commit{topicPartition{t.Topic, p.Partition}, o})
			size += offsetRecordSize(req.Group, t.Topic, meta)
		}
	}
	if len(commits) == 0 {
		return answered(setAll(0))
	}
	w, code := c.appendLocked(sh, change{
		group: req.Group,
		size:  size,
		build: func() []records.KV {
			recs := make([]records.KV, len(commits))
			for i, cm := range commits {
				recs[i] = records.KV{Key: offsetKey(req.Group, cm.tp.topic, cm.tp.partition), Value: offsetValue(cm.o)}
			}
			return recs
		},
		apply: func() {
			if g == nil {
				g = newGroup(req.Group, now)
				sh.groups[req.Group] = g
			}
			for _, cm := range commits {
				cm.o.end = sh.ends[req.Group]
				g.offsets[cm.tp] = cm.o
			}
		},
	})
	if code == kerr.RecordListTooLarge.Code {
		// As Kafka: the commit as a whole is larger than the offsets
		// topic's max.message.bytes.
		code = kerr.InvalidCommitOffsetSize.Code
	}
	if code != 0 {
		return answered(setAll(code))
	}
	return func(ctx context.Context) *kmsg.OffsetCommitResponse { return setAll(await(ctx, w)) }
}

// commitCode is the error of one partition's commit that is refused
// whatever the group: a topic name longer than Kafka allows (no such
// topic exists; it might not fit its record either, see maxRecordString)
// is UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers a commit for a topic it
// does not know, and metadata over offset.metadata.max.bytes (or over
// what its record holds) OFFSET_METADATA_TOO_LARGE.
func (c *Coordinator) commitCode(topic string, metadata *string) int16 {
	switch {
	case len(topic) > maxTopicName:
		return kerr.UnknownTopicOrPartition.Code
	case metadata != nil && len(*metadata) > min(c.cfg.MaxMetadataBytes, maxRecordString):
		return kerr.OffsetMetadataTooLarge.Code
	}
	return 0
}

// StartFetchOffsets handles an OffsetFetch request (one group; versions up
// to 7). Topics nil asks for every partition the group committed. It
// reads the offsets at once; unless everything it read is known to be
// committed, the wait answers only once it is (no client reads an offset
// that a failover could take back), or with a retriable error if that
// does not happen within the commit timeout (see fetchWaitLocked).
func (c *Coordinator) StartFetchOffsets(req *kmsg.OffsetFetchRequest) func(context.Context) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(req.Group, true)
	if code != 0 {
		resp.ErrorCode = code
		return answered(resp)
	}
	g := sh.groups[req.Group]
	partition := func(topic string, p int32) kmsg.OffsetFetchResponseTopicPartition {
		rp := kmsg.NewOffsetFetchResponseTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
		if g != nil && req.RequireStable && g.pendingIn(topicPartition{topic, p}) {
			// KIP-447: an offset an open transaction may change is not
			// answered; clients retry.
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return rp
		}
		if g != nil {
			if o, ok := g.offsets[topicPartition{topic, p}]; ok {
				rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
			}
		}
		return rp
	}
	if req.Topics == nil {
		byTopic := map[string][]int32{}
		if g != nil {
			for tp := range g.offsets {
				byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
			}
		}
		for _, topic := range sortedKeys(byTopic) {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = topic
			ps := byTopic[topic]
			slices.Sort(ps)
			for _, p := range ps {
				rt.Partitions = append(rt.Partitions, partition(topic, p))
			}
			resp.Topics = append(resp.Topics, rt)
		}
	} else {
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, partition(t.Topic, p))
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	wait := c.fetchWaitLocked(sh, req.Group)
	if wait == nil {
		return answered(resp)
	}
	return func(ctx context.Context) *kmsg.OffsetFetchResponse {
		err := wait(ctx)
		if err == nil {
			return resp
		}
		// What was read may not be committed: answer a retriable error
		// instead, per partition too (v1 has no top-level error).
		top, part := kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorLoadInProgress.Code
		switch {
		case errors.Is(err, ErrNotLeader):
			top, part = kerr.NotCoordinator.Code, kerr.NotCoordinator.Code
		case req.Version >= 7 && len(resp.Topics) > 0:
			// Kafka's answer for a partition whose commit is pending
			// (which its clients retry).
			top, part = 0, kerr.UnstableOffsetCommit.Code
		}
		resp.ErrorCode = top
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				rp := &resp.Topics[i].Partitions[j]
				rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = -1, -1, nil, part
			}
		}
		return resp
	}
}

// fetchWaitLocked returns nil if everything memory holds of group is known
// to be committed in sh's epoch: the records below the load's end, and the
// group's latest append, whatever the outcome of its write (a write that
// timed out stays in memory and may be committed later, or taken back by
// a failover). Otherwise it returns a wait for their commit, bounded by
// the commit timeout, that fails with ErrNotLeader if the shard no longer
// leads in its epoch.
func (c *Coordinator) fetchWaitLocked(sh *shard, group string) func(context.Context) error {
	need := sh.ends[group]
	if need <= sh.committed {
		delete(sh.ends, group)
		return nil
	}
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
		defer cancel()
		stop := context.AfterFunc(sh.ctx, cancel)
		defer stop()
		err := sh.store.WaitCommitted(ctx, sh.epoch, need)
		if sh.ctx.Err() != nil {
			return ErrNotLeader
		}
		if err != nil {
			return err
		}
		c.mu.Lock()
		sh.committed = max(sh.committed, need)
		if e, ok := sh.ends[group]; ok && e <= sh.committed {
			delete(sh.ends, group)
		}
		c.mu.Unlock()
		return nil
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Describe handles DescribeGroups for the groups coordinated here.
func (c *Coordinator) Describe(groups []string) []kmsg.DescribeGroupsResponseGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kmsg.DescribeGroupsResponseGroup
	for _, id := range groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		sh, code := c.lookupLocked(id, true)
		rg.ErrorCode = code
		if code == 0 {
			g := sh.groups[id]
			if g == nil {
				rg.State = "Dead"
			} else {
				rg.State, rg.ProtocolType, rg.Protocol = g.state.String(), g.protocolType, g.protocol
				for _, mid := range g.memberOrder() {
					m := g.members[mid]
					rm := kmsg.NewDescribeGroupsResponseGroupMember()
					rm.MemberID, rm.ClientID, rm.ClientHost = m.id, m.clientID, m.clientHost
					if m.instanceID != "" {
						rm.InstanceID = kmsg.StringPtr(m.instanceID)
					}
					if g.state == stateStable || g.state == stateCompletingRebalance {
						rm.ProtocolMetadata = m.metadataFor(g.protocol)
					}
					if g.state == stateStable {
						rm.MemberAssignment = m.assignment
					}
					rg.Members = append(rg.Members, rm)
				}
			}
		}
		out = append(out, rg)
	}
	return out
}

// List handles ListGroups: the groups coordinated here, filtered by state
// names if any are given (v4). It reports COORDINATOR_LOAD_IN_PROGRESS
// while a partition is loading.
func (c *Coordinator) List(states []string) ([]kmsg.ListGroupsResponseGroup, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kmsg.ListGroupsResponseGroup
	code := int16(0)
	for _, sh := range c.shards {
		if sh.loading {
			code = kerr.CoordinatorLoadInProgress.Code
			continue
		}
		for _, id := range sortedKeys(sh.groups) {
			g := sh.groups[id]
			if len(states) > 0 && !slices.ContainsFunc(states, func(s string) bool { return equalFold(s, g.state.String()) }) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState = id, g.protocolType, g.state.String()
			out = append(out, lg)
		}
	}
	return out, code
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// StartDelete handles DeleteGroups: empty groups lose their offsets and
// metadata (tombstones); a group with members is NON_EMPTY_GROUP. A group
// is gone at once; the wait answers once its tombstones are committed.
// The tombstones of all the groups of one partition are appended together,
// in as few batches as fit, and one goroutine awaits their commit.
func (c *Coordinator) StartDelete(groups []string) func(context.Context) []kmsg.DeleteGroupsResponseGroup {
	out := make([]kmsg.DeleteGroupsResponseGroup, len(groups))
	writes := make([]*write, len(groups))
	c.mu.Lock()
	defer c.mu.Unlock()
	type batch struct {
		changes []change
		index   []int // the group each change deletes, by its place in groups
	}
	batches := map[*shard]*batch{}
	var order []*shard
	seen := map[string]bool{}
	for i, id := range groups {
		out[i] = kmsg.NewDeleteGroupsResponseGroup()
		out[i].Group = id
		sh, code := c.lookupLocked(id, true)
		var g *group
		if code == 0 {
			g = sh.groups[id]
			switch {
			case g == nil || seen[id]:
				code = kerr.GroupIDNotFound.Code
			case len(g.members) > 0 || g.state != stateEmpty:
				code = kerr.NonEmptyGroup.Code
			}
		}
		out[i].ErrorCode = code
		if code != 0 {
			continue
		}
		seen[id] = true
		tps := make([]topicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
		changes := c.tombstoneChanges(sh, g, tps, g.stored || len(tps) > 0, true, nil)
		if len(changes) == 0 {
			// Nothing of it is in the log (no offsets, no metadata).
			delete(sh.groups, id)
			continue
		}
		b := batches[sh]
		if b == nil {
			b = &batch{}
			batches[sh] = b
			order = append(order, sh)
		}
		for _, ch := range changes {
			b.changes = append(b.changes, ch)
			b.index = append(b.index, i)
		}
	}
	for _, sh := range order {
		b := batches[sh]
		w, codes := c.appendChangesLocked(sh, b.changes, nil)
		for k, code := range codes {
			i := b.index[k]
			if code != 0 {
				if out[i].ErrorCode == 0 {
					out[i].ErrorCode = code
				}
				continue
			}
			writes[i] = w
		}
	}
	return func(ctx context.Context) []kmsg.DeleteGroupsResponseGroup {
		for i, w := range writes {
			if w != nil && out[i].ErrorCode == 0 {
				out[i].ErrorCode = await(ctx, w)
			}
		}
		return out
	}
}

// tombstoneChanges are the changes that delete g's offsets of tps and, if
// remove, g itself from memory (writing its tombstone too if groupTomb),
// each small enough for a batch (unless a single tombstone is larger):
// every change deletes its own offsets once appended, the last one the
// group; the group's tombstone goes with the last offsets' if it fits, or
// alone after them. done (if not nil) is every change's. It returns
// nothing if there is nothing to write.
func (c *Coordinator) tombstoneChanges(sh *shard, g *group, tps []topicPartition, groupTomb, remove bool,
	done func(code int16)) []change {
	if len(tps) == 0 && !groupTomb {
		return nil
	}
	limit := sh.store.MaxBatchBytes() - batchOverhead
	var out []change
	var piece []topicPartition
	size := 0
	flush := func(last bool) {
		piece, size := piece, size
		ch := change{group: g.id, size: size, done: done}
		if last && groupTomb {
			ch.size += groupTombstoneSize(g.id)
		}
		ch.build = func() []records.KV {
			recs := make([]records.KV, 0, len(piece)+1)
			for _, tp := range piece {
				recs = append(recs, records.KV{Key: offsetKey(g.id, tp.topic, tp.partition)})
			}
			if last && groupTomb {
				recs = append(recs, records.KV{Key: groupKey(g.id)})
			}
			return recs
		}
		ch.apply = func() {
			for _, tp := range piece {
				delete(g.offsets, tp)
			}
			if last && groupTomb {
				g.stored = false
			}
			if last && remove && sh.groups[g.id] == g {
				delete(sh.groups, g.id)
			}
		}
		out = append(out, ch)
	}
	for _, tp := range tps {
		n := tombstoneSize(g.id, tp.topic)
		if len(piece) > 0 && size+n > limit {
			flush(false)
			piece, size = nil, 0
		}
		piece = append(piece, tp)
		size += n
	}
	if groupTomb && len(piece) > 0 && size+groupTombstoneSize(g.id) > limit {
		flush(false)
		piece, size = nil, 0
	}
	flush(true)
	return out
}

// StartDeleteOffsets handles OffsetDelete: the group's committed offsets
// of the given partitions are removed, unless the group's members
// subscribe to the topic (GROUP_SUBSCRIBED_TO_TOPIC). They are gone at
// once; the wait answers once the tombstones are committed.
func (c *Coordinator) StartDeleteOffsets(req *kmsg.OffsetDeleteRequest) func(context.Context) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	sh, code := c.lookupLocked(req.Group, false)
	var g *group
	if code == 0 {
		if g = sh.groups[req.Group]; g == nil {
			code = kerr.GroupIDNotFound.Code
		}
	}
	if code != 0 {
		resp.ErrorCode = code
		return answered(resp)
	}
	subscribed, known := g.subscribedTopics()
	if !known {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		return answered(resp)
	}
	var recs []records.KV
	var gone []topicPartition
	size := 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed[t.Topic] {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[topicPartition{t.Topic, p.Partition}]; ok {
				recs = append(recs, records.KV{Key: offsetKey(g.id, t.Topic, p.Partition)})
				gone = append(gone, topicPartition{t.Topic, p.Partition})
				size += tombstoneSize(g.id, t.Topic)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) == 0 {
		return answered(resp)
	}
	w, code := c.appendLocked(sh, change{
		group: g.id,
		size:  size,
		build: func() []records.KV { return recs },
		apply: func() {
			for _, tp := range gone {
				delete(g.offsets, tp)
			}
		},
	})
	if code != 0 {
		resp.ErrorCode = code
		return answered(resp)
	}
	return func(ctx context.Context) *kmsg.OffsetDeleteResponse {
		resp.ErrorCode = await(ctx, w)
		return resp
	}
}

// Tick runs the coordinator's timers as of now: expired pending member
// ids and sessions, rebalance deadlines, the expiry of empty groups'
// offsets (offsets.retention.minutes) and of empty groups without offsets,
// and the rewrite of groups whose metadata write failed. It does not wait
// for any write: its changes take effect in memory as their records are
// appended, all the writes of one partition together in as few batches as
// fit, awaited by one goroutine; a group has at most one expiry write in
// flight, so a slow partition neither stalls the timers nor piles up
// writes.
func (c *Coordinator) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	for _, sh := range c.shards {
		if sh.loading {
			continue
		}
		for id, e := range sh.ends {
			if e <= sh.committed {
				delete(sh.ends, id) // a failed write committed after all
			}
		}
		var changes []change
		var owners []*group // of the metadata writes among changes, by place
		for _, g := range sh.groups {
			for id, until := range g.pending {
				if now.After(until) {
					delete(g.pending, id)
				}
			}
			persist, dead := false, false
			switch g.state {
			case statePreparingRebalance:
				// A member that has not rejoined yet still has to
				// heartbeat; one waiting in JoinGroup is alive.
				for id, m := range g.members {
					if m.awaitingJoin == nil && now.After(m.deadline) {
						g.removeMember(id)
					}
				}
				if !now.Before(g.rebalanceDeadline) || g.allJoined() && !now.Before(g.initialDelayUntil) {
					persist = g.completeJoin(now)
				}
			case stateStable, stateCompletingRebalance:
				left := false
				for id, m := range g.members {
					// One waiting in SyncGroup (for its leader) is alive.
					if m.awaitingSync == nil && now.After(m.deadline) {
						g.removeMember(id)
						left = true
					}
				}
				if left {
					persist = g.memberLeft(now)
				}
			case stateEmpty:
				var expiry []change
				expiry, dead = c.expireLocked(sh, g, now)
				changes = append(changes, expiry...)
				owners = append(owners, make([]*group, len(expiry))...)
			}
			// A group whose latest metadata write failed is written again
			// once settled (a rebalance in progress writes it anyway).
			retry := g.metaDirty && g.metaWriting == 0 && (g.state == stateStable || g.state == stateEmpty)
			if !dead && (persist || retry) {
				changes = append(changes, c.groupChange(sh, g, nil))
				owners = append(owners, g)
			}
		}
		if len(changes) == 0 {
			continue
		}
		n := len(changes)
		_, codes := c.appendChangesLocked(sh, changes, func(code int16) {
			if code != 0 {
				c.warnLocked(sh, "a write of expired offsets or group metadata failed", "changes", n, "code", code)
			}
		})
		refused := 0
		for i, code := range codes {
			if code != 0 {
				refused++
				if g := owners[i]; g != nil {
					markDirtyLocked(g)
					if code == kerr.RecordListTooLarge.Code {
						c.tooLargeLocked(sh, g, now)
					}
				}
			}
		}
		if refused > 0 {
			c.warnLocked(sh, "writing expired offsets or group metadata refused; tried again at the next tick",
				"changes", refused, "code", codes[len(codes)-1])
		}
	}
}

// tooLargeLocked handles a group whose metadata no longer fits a batch of
// its partition (its max.message.bytes was lowered, or a static member's
// replacement was undone with a larger subscription), so that Tick does
// not try to write it again at every tick: a group with members
// rebalances, as Kafka's does when its metadata cannot be written, and
// the rebalance writes the new membership (its leader's SyncGroup gets
// UNKNOWN_SERVER_ERROR if that does not fit either); an empty one is
// left as it is, with a warning.
func (c *Coordinator) tooLargeLocked(sh *shard, g *group, now time.Time) {
	if len(g.members) > 0 {
		g.prepareRebalance(now)
		return
	}
	g.metaDirty = false
	c.warnLocked(sh, "an empty group's metadata is larger than a batch of "+OffsetsTopic+"; not written", "group", g.id)
}

// emptyGroupGrace is how long an empty group without offsets is kept
// (Kafka drops such a group at its next offsets cleanup, which runs every
// offsets.retention.check.interval.ms, 10 minutes).
const emptyGroupGrace = 10 * time.Minute

// expireLocked returns the changes that remove an empty group's expired
// offsets, and the group once it has none left, has been empty for
// emptyGroupGrace (or the offsets' retention if shorter) and expects no
// member. dead tells whether the group goes. A group that was never
// written (only handed out member ids, say) has nothing in the log and
// goes at once, without a write.
func (c *Coordinator) expireLocked(sh *shard, g *group, now time.Time) (changes []change, dead bool) {
	if g.expiring || len(g.pendingTxn) > 0 {
		// Not while transactions may still commit offsets of the group.
		return nil, false
	}
	var tps []topicPartition
	for tp, o := range g.offsets {
		if now.Sub(maxTime(time.UnixMilli(o.CommitTimestamp), g.stateSince)) > c.cfg.OffsetsRetention {
			tps = append(tps, tp)
		}
	}
	idle := len(g.members) == 0 && len(g.pending) == 0 && len(tps) == len(g.offsets)
	dead = idle && (!g.stored && len(tps) == 0 || now.Sub(g.stateSince) >= min(emptyGroupGrace, c.cfg.OffsetsRetention))
	if len(tps) == 0 && !dead {
		return nil, false
	}
	changes = c.tombstoneChanges(sh, g, tps, dead && (g.stored || len(tps) > 0), dead, func(int16) { g.expiring = false })
	if len(changes) == 0 {
		delete(sh.groups, g.id) // never written
		return nil, true
	}
	for i := range changes {
		apply := changes[i].apply
		changes[i].apply = func() { apply(); g.expiring = true }
	}
	return changes, dead
}
