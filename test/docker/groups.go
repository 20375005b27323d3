package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consumer-group workload: members of one group (franz-go's classic
// group protocol, cooperative-sticky balancing) read a topic while a
// campaign runs, each committing what it has processed after every poll and
// before giving partitions up, and recording every record, commit and
// change of ownership. CheckGroup checks the outcome against the producer's
// acknowledgements, the final log and the offsets committed at the end.

const (
	// groupPollTimeout bounds one poll, so that a member whose commit
	// failed retries it soon even when no records arrive.
	groupPollTimeout = time.Second
	// groupCommitTimeout bounds one commit (kgo retries retriable errors,
	// such as NOT_COORDINATOR, until then).
	groupCommitTimeout = 10 * time.Second
	// groupStopTimeout bounds each stage of Group.Stop: the members' poll
	// loops ending, then the members leaving the group and closing.
	groupStopTimeout = 20 * time.Second
)

// GroupRead is one record a group member polled.
type GroupRead struct {
	// Seq is the read's place in the group's history: the reads, commits
	// and ownership changes of all members are numbered together, in the
	// order they were recorded.
	Seq    int
	Member int
	// Generation is the member's group generation when it polled the
	// record (-1 if it had none).
	Generation int32
	Partition  int32
	Offset     int64
	Value      string
	At         time.Time
}

// GroupCommit is one partition's part of one offset commit.
type GroupCommit struct {
	// Seq: see GroupRead.
	Seq    int
	Member int
	// Generation is the generation the commit was sent with.
	Generation int32
	Partition  int32
	// Offset is the committed offset: the next offset the group is to
	// read (the last processed offset plus one).
	Offset int64
	// Err is nil if the coordinator acknowledged the commit of this
	// partition. A commit that failed may or may not have been stored.
	Err error
	// OnRevoke is set for a commit made in OnPartitionsRevoked, before
	// giving partitions up (or leaving the group).
	OnRevoke bool
	// At is when the outcome was known.
	At time.Time
}

// OwnershipChange is partitions given to a member or taken from it.
type OwnershipChange struct {
	// Seq: see GroupRead.
	Seq    int
	Member int
	// What is "assigned", "revoked" (given up in a rebalance or on
	// leaving, after committing) or "lost" (taken away by a group error,
	// such as an expired session, without a chance to commit).
	What       string
	Generation int32
	Partitions []int32
	At         time.Time
}

// GroupHistory is what a group's members did, each list in the order of
// its Seq numbers.
type GroupHistory struct {
	Members int
	Reads   []GroupRead
	Commits []GroupCommit
	Changes []OwnershipChange
	// PollErrors counts the errors members' polls returned (brokers are
	// being killed: they are expected); LastPollError is the last.
	PollErrors    int
	LastPollError error
	// LeaveErrors are the members' failures to leave the group on Stop
	// (expected while a broker is down; the group's coordinator then
	// removes them at their session timeout).
	LeaveErrors []string
	// StopProblems names the members that did not stop within the bounds
	// of Group.Stop (they were left behind).
	StopProblems []string
}

// Summary is a one-line account of the history, e.g. for a test log.
func (h GroupHistory) Summary() string {
	values := map[string]bool{}
	for _, r := range h.Reads {
		values[r.Value] = true
	}
	failed := 0
	for _, c := range h.Commits {
		if c.Err != nil {
			failed++
		}
	}
	changes := map[string]int{}
	for _, ch := range h.Changes {
		changes[ch.What]++
	}
	s := fmt.Sprintf("%d members: %d records read (%d distinct values), %d partition commits (%d failed), %d assignments, %d revocations, %d losses, %d poll errors",
		h.Members, len(h.Reads), len(values), len(h.Commits), failed, changes["assigned"], changes["revoked"], changes["lost"], h.PollErrors)
	if h.LastPollError != nil {
		s += fmt.Sprintf(" (last: %v)", h.LastPollError)
	}
	if len(h.LeaveErrors) > 0 {
		s += "; " + strings.Join(h.LeaveErrors, "; ")
	}
	if len(h.StopProblems) > 0 {
		s += "; " + strings.Join(h.StopProblems, "; ")
	}
	return s
}

// Group is a consumer group's members reading a topic while a campaign
// runs. Each member runs a poll loop on its own goroutine; Stop stops them
// and waits for them (within bounds).
type Group struct {
	topic   string
	members []*groupMember
	// cancel ends the members' polls.
	cancel   context.CancelFunc
	stopOnce sync.Once

	// mu guards the history, which the poll loops and kgo's callbacks
	// (on its group-management goroutines) append to.
	mu sync.Mutex
	// seq is the last Seq given to a read, commit or change.
	seq     int
	reads   []GroupRead
	commits []GroupCommit
	changes []OwnershipChange
	// read holds every value read, by any member (for Unread).
	read map[string]bool
	// pollErrs and lastErr count poll errors and keep the last.
	pollErrs int
	lastErr  error
	// leaveErrs and problems are Stop's: see GroupHistory.
	leaveErrs []string
	problems  []string
}

// groupMember is one member: its client and its poll loop.
type groupMember struct {
	g     *Group
	index int
	cl    *kgo.Client
	// done is closed when the poll loop has ended.
	done chan struct{}
}

// StartGroup starts members consumers of topic in group (from the start of
// the topic when the group has no committed offsets), until Stop. Each
// polls, records what it read, commits it synchronously
// (CommitOffsetsSync of its uncommitted offsets, which is what kgo's
// CommitUncommittedOffsets does, with the outcome of every partition
// recorded) and then allows rebalances (BlockRebalanceOnPoll: a rebalance
// never comes between a poll and its commit); on revocation it commits
// again before giving partitions up. Autocommit is off.
func (c *Cluster) StartGroup(topic, group string, members int) *Group {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g := &Group{topic: topic, cancel: cancel, read: map[string]bool{}}
	for i := range members {
		m := &groupMember{g: g, index: i, done: make(chan struct{})}
		m.cl = c.Client(
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.DisableAutoCommit(),
			kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
				m.changed("assigned", cl, ps)
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, ps map[string][]int32) {
				// Commit what was processed before giving it up; ctx is
				// the client's, live until Close has left the group.
				m.commit(ctx, true)
				m.changed("revoked", cl, ps)
			}),
			kgo.OnPartitionsLost(func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
				m.changed("lost", cl, ps)
			}),
		)
		g.members = append(g.members, m)
	}
	for _, m := range g.members {
		go m.run(ctx)
	}
	// Stop the members before the cluster's cleanup closes their clients
	// (cleanups run last-in first-out), in case the test never does.
	c.t.Cleanup(func() { g.Stop() })
	return g
}

// run is the member's poll loop: poll, record, commit, allow rebalances.
func (m *groupMember) run(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, groupPollTimeout)
		fs := m.cl.PollFetches(pctx)
		cancel()
		_, gen := m.cl.GroupMetadata()
		now := time.Now()
		g := m.g
		g.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			g.pollErrs++
			g.lastErr = fmt.Errorf("member %d: %w", m.index, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			g.seq++
			g.reads = append(g.reads, GroupRead{Seq: g.seq, Member: m.index, Generation: gen,
				Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), At: now})
			g.read[string(r.Value)] = true
		})
		g.mu.Unlock()
		// Commit even when this poll returned nothing: a failed commit
		// is retried at the next poll. Not with ctx: a commit in flight
		// when Stop is called is let finish.
		m.commit(context.Background(), false)
		m.cl.AllowRebalance()
	}
}

// commit commits the member's uncommitted offsets (every record it has
// polled, and so processed) synchronously and records each partition's
// outcome.
func (m *groupMember) commit(ctx context.Context, onRevoke bool) {
	offsets := m.cl.UncommittedOffsets()
	if len(offsets[m.g.topic]) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, groupCommitTimeout)
	defer cancel()
	m.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		now := time.Now()
		// The member consumes one topic: its partitions identify the
		// response's parts (whether they name the topic or its id).
		codes := map[int32]int16{}
		if err == nil {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					codes[p.Partition] = p.ErrorCode
				}
			}
		}
		gen := req.Generation
		if req.MemberID == "" { // not sent: kgo failed it before
			_, gen = m.cl.GroupMetadata()
		}
		var parts []int32
		for p := range offsets[m.g.topic] {
			parts = append(parts, p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		g := m.g
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, p := range parts {
			perr := err
			if perr == nil {
				if code, ok := codes[p]; ok {
					perr = kerr.ErrorForCode(code)
				} else {
					perr = fmt.Errorf("no answer for partition %d in the commit response", p)
				}
			}
			g.seq++
			g.commits = append(g.commits, GroupCommit{Seq: g.seq, Member: m.index, Generation: gen, Partition: p,
				Offset: offsets[m.g.topic][p].Offset, Err: perr, OnRevoke: onRevoke, At: now})
		}
	})
}

// changed records an ownership change of the member's topic's partitions.
func (m *groupMember) changed(what string, cl *kgo.Client, ps map[string][]int32) {
	parts := append([]int32(nil), ps[m.g.topic]...)
	if len(parts) == 0 {
		// (Revoked is also called at the end of a session that revokes
		// nothing.)
		return
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	_, gen := cl.GroupMetadata()
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.changes = append(g.changes, OwnershipChange{Seq: g.seq, Member: m.index, What: what, Generation: gen, Partitions: parts, At: time.Now()})
}

// Count is the number of records the members read so far (a record read
// twice counts twice).
func (g *Group) Count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.reads)
}

// Unread is the number of acked values no member has read yet.
func (g *Group) Unread(acked map[string]Ack) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for v := range acked {
		if !g.read[v] {
			n++
		}
	}
	return n
}

// Stop stops the members and returns the group's history. Each member's
// poll loop ends (its last commit included), then each leaves the group
// (committing in OnPartitionsRevoked) and closes its client. Each stage
// waits at most groupStopTimeout (brokers may be down); a member that
// overruns is left behind and named in StopProblems; failures to leave
// are in LeaveErrors. Stop can be called more than once.
func (g *Group) Stop() GroupHistory {
	g.stopOnce.Do(g.stop)
	g.mu.Lock()
	defer g.mu.Unlock()
	return GroupHistory{
		Members:       len(g.members),
		Reads:         append([]GroupRead(nil), g.reads...),
		Commits:       append([]GroupCommit(nil), g.commits...),
		Changes:       append([]OwnershipChange(nil), g.changes...),
		PollErrors:    g.pollErrs,
		LastPollError: g.lastErr,
		LeaveErrors:   append([]string(nil), g.leaveErrs...),
		StopProblems:  append([]string(nil), g.problems...),
	}
}

func (g *Group) stop() {
	g.cancel()
	deadline := time.Now().Add(groupStopTimeout)
	var stopped []*groupMember
	for _, m := range g.members {
		if closedBy(m.done, deadline) {
			stopped = append(stopped, m)
			continue
		}
		g.problem("member %d: poll loop still running after %v; not closed", m.index, groupStopTimeout)
	}
	// Leave and close all at once: a member leaving triggers a rebalance
	// the others would otherwise take part in.
	closed := make([]chan struct{}, len(stopped))
	for i, m := range stopped {
		closed[i] = make(chan struct{})
		go func() {
			defer close(closed[i])
			ctx, cancel := context.WithTimeout(context.Background(), groupStopTimeout)
			defer cancel()
			if err := m.cl.LeaveGroupContext(ctx); err != nil {
				g.mu.Lock()
				g.leaveErrs = append(g.leaveErrs, fmt.Sprintf("member %d: leave group: %v", m.index, err))
				g.mu.Unlock()
			}
			m.cl.Close()
		}()
	}
	// Close waits for the leave, which ctx bounds; a little more for the
	// rest.
	deadline = time.Now().Add(groupStopTimeout + 5*time.Second)
	for i, m := range stopped {
		if !closedBy(closed[i], deadline) {
			g.problem("member %d: client not closed after %v; left behind", m.index, groupStopTimeout+5*time.Second)
		}
	}
}

// closedBy waits until ch is closed or deadline passes, and says whether
// ch was closed.
func closedBy(ch <-chan struct{}, deadline time.Time) bool {
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func (g *Group) problem(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.problems = append(g.problems, fmt.Sprintf(format, args...))
}

// GroupCoordinator asks the brokers for group's coordinator and returns its
// node id.
func (c *Cluster) GroupCoordinator(group string) (int32, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	r, ok := c.Admin().FindGroupCoordinators(ctx, group)[group]
	switch {
	case !ok:
		return 0, fmt.Errorf("find coordinator of group %s: no answer", group)
	case r.Err != nil:
		return 0, fmt.Errorf("find coordinator of group %s: %w", group, r.Err)
	}
	return r.NodeID, nil
}

// CommittedOffsets fetches group's committed offsets of topic's partitions
// (partitions without one are left out). Call it after the cluster has
// healed and the group has stopped.
func (c *Cluster) CommittedOffsets(group, topic string) (map[int32]int64, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resps, err := c.Admin().FetchOffsets(ctx, group)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch committed offsets of group %s: %w", group, err)
	}
	out := map[int32]int64{}
	for p, r := range resps[topic] {
		if r.At >= 0 {
			out[p] = r.At
		}
	}
	return out, nil
}

// CheckGroup checks a group workload's outcome: acked is every
// acknowledgement, final every partition's log read back after healing, h
// the group's history (after Stop) and committed the group's committed
// offsets fetched at the end (CommittedOffsets). It reports
//   - group-lost: an acknowledged value no member read (delivery through
//     the group is at least once; the caller lets the group catch up
//     after healing, see Group.Unread);
//   - group-read-truncated: a member read a value at an offset where the
//     final log has another value or none;
//   - commit-lost: a partition's committed offset at the end is below the
//     highest offset whose commit the coordinator acknowledged (an
//     acknowledged commit was lost, or overwritten by a lower one);
//   - commit-beyond-log: a committed offset beyond the partition's final
//     log end;
//   - group-non-monotonic: a member read a partition's offsets out of
//     (strictly increasing) order within one uninterrupted ownership of
//     it (from its assignment to its revocation or loss; reads again
//     after a rebalance are expected).
func CheckGroup(acked map[string]Ack, final map[int32]map[int64]string, h GroupHistory, committed map[int32]int64) []Anomaly {
	var out []Anomaly
	read := map[string]bool{}
	type span struct {
		reads int
		max   int64
	}
	perP := map[int32]span{} // what the members read of each partition
	for _, r := range h.Reads {
		read[r.Value] = true
		s, ok := perP[r.Partition]
		if !ok || r.Offset > s.max {
			s.max = r.Offset
		}
		s.reads++
		perP[r.Partition] = s
	}
	for _, v := range slices.Sorted(maps.Keys(acked)) {
		if read[v] {
			continue
		}
		a := acked[v]
		seen := "no member read the partition"
		if s, ok := perP[a.Partition]; ok {
			seen = fmt.Sprintf("members read the partition %d times, up to offset %d", s.reads, s.max)
		}
		co := "none"
		if o, ok := committed[a.Partition]; ok {
			co = fmt.Sprint(o)
		}
		out = append(out, Anomaly{"group-lost", a.At, fmt.Sprintf("%s acknowledged at partition %d offset %d, read by no member (%s; committed offset %s)",
			v, a.Partition, a.Offset, seen, co)})
	}

	for _, r := range h.Reads {
		if m := readMismatch(acked, final, r.Partition, r.Offset, r.Value); m != "" {
			out = append(out, Anomaly{"group-read-truncated", r.At, fmt.Sprintf("member %d (generation %d) read %s at partition %d offset %d %s",
				r.Member, r.Generation, r.Value, r.Partition, r.Offset, m)})
		}
	}

	// The highest acknowledged commit of each partition.
	best := map[int32]GroupCommit{}
	for _, c := range h.Commits {
		if c.Err != nil {
			continue
		}
		if b, ok := best[c.Partition]; !ok || c.Offset > b.Offset {
			best[c.Partition] = c
		}
	}
	for _, p := range sortedPartitions(best) {
		b := best[p]
		got, ok := committed[p]
		if ok && got >= b.Offset {
			continue
		}
		gotS := "none"
		if ok {
			gotS = fmt.Sprint(got)
		}
		out = append(out, Anomaly{"commit-lost", b.At, fmt.Sprintf("member %d's commit of partition %d offset %d (generation %d%s) was acknowledged, the committed offset at the end is %s",
			b.Member, p, b.Offset, b.Generation, revokeNote(b.OnRevoke), gotS)})
	}

	for _, p := range sortedPartitions(committed) {
		o := committed[p]
		end := int64(0)
		for off := range final[p] {
			end = max(end, off+1)
		}
		if o <= end {
			continue
		}
		// The time of the acknowledged commit that set it, if any.
		var at time.Time
		who := "no acknowledged commit of it"
		for _, c := range h.Commits {
			if c.Err == nil && c.Partition == p && c.Offset == o {
				at, who = c.At, fmt.Sprintf("committed by member %d, generation %d%s", c.Member, c.Generation, revokeNote(c.OnRevoke))
			}
		}
		out = append(out, Anomaly{"commit-beyond-log", at, fmt.Sprintf("committed offset of partition %d is %d (%s), beyond the final log end %d", p, o, who, end)})
	}

	out = append(out, checkOwnedOrder(h)...)
	return out
}

// checkOwnedOrder reports group-non-monotonic reads: each member's reads
// and ownership changes, in order, with the last read of each partition
// forgotten whenever the partition is assigned, revoked or lost.
func checkOwnedOrder(h GroupHistory) []Anomaly {
	type step struct {
		seq    int
		read   *GroupRead
		change *OwnershipChange
	}
	var steps []step
	for i := range h.Reads {
		steps = append(steps, step{seq: h.Reads[i].Seq, read: &h.Reads[i]})
	}
	for i := range h.Changes {
		steps = append(steps, step{seq: h.Changes[i].Seq, change: &h.Changes[i]})
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].seq < steps[j].seq })
	type memberPartition struct {
		member    int
		partition int32
	}
	last := map[memberPartition]*GroupRead{}
	var out []Anomaly
	for _, s := range steps {
		if ch := s.change; ch != nil {
			for _, p := range ch.Partitions {
				delete(last, memberPartition{ch.Member, p})
			}
			continue
		}
		r := s.read
		k := memberPartition{r.Member, r.Partition}
		if prev := last[k]; prev != nil && r.Offset <= prev.Offset {
			out = append(out, Anomaly{"group-non-monotonic", r.At, fmt.Sprintf("member %d read partition %d offset %d (%s, generation %d) after offset %d (%s, generation %d, read at %s) without losing the partition in between",
				r.Member, r.Partition, r.Offset, r.Value, r.Generation, prev.Offset, prev.Value, prev.Generation, prev.At.UTC().Format("15:04:05.000"))})
		}
		last[k] = r
	}
	return out
}

func revokeNote(onRevoke bool) string {
	if onRevoke {
		return ", on revocation"
	}
	return ""
}

func sortedPartitions[V any](m map[int32]V) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
