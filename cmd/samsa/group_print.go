package main

// `group` output and the pure parts of its commands: the model of a
// described group built from kadm results, lag, the printers, and the
// offset reset plan. Tested in group_print_test.go.
//
// The tables are those of kafka-consumer-groups.sh:
//
//	GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID
//
// with "-" where a value is unknown.

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// groupDeadState is the state a coordinator reports for a group it does
// not know.
const groupDeadState = "Dead"

// printGroupList writes one line per group: name, state, protocol type
// ("-" for a group that only has committed offsets). Nothing when there are
// no groups.
func printGroupList(w io.Writer, groups []kadm.ListedGroup) error {
	if len(groups) == 0 {
		return nil
	}
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "GROUP\tSTATE\tPROTOCOL-TYPE\n")
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Group, orDash(g.State), orDash(g.ProtocolType))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// groupDescription is one group as `group describe` shows it.
type groupDescription struct {
	Group string
	State string
	// ProtocolType is "consumer" for Kafka consumers; Protocol the
	// assignor (range, cooperative-sticky...). Both "" when unknown.
	ProtocolType, Protocol string
	// Coordinator is "host:port (id)".
	Coordinator string
	Members     []groupMember
	// Rows are the offset table, sorted by topic and partition, members
	// without an assignment last.
	Rows []groupOffsetRow
}

// groupMember is a member of a group with its decoded assignment.
type groupMember struct {
	ID, InstanceID, Host, ClientID string
	// Assigned maps topics to their sorted assigned partitions; nil when
	// the assignment is unknown (not the consumer protocol, or the group is
	// rebalancing).
	Assigned map[string][]int32
}

// partitions counts the member's assigned partitions.
func (m groupMember) partitions() int {
	n := 0
	for _, ps := range m.Assigned {
		n += len(ps)
	}
	return n
}

// assignment formats the assignment as kafka-consumer-groups --members
// --verbose: "t1(0,1),t2(3)", "-" if none.
func (m groupMember) assignment() string {
	if m.partitions() == 0 {
		return "-"
	}
	var b strings.Builder
	for _, topic := range sortedKeys(m.Assigned) {
		ps := m.Assigned[topic]
		if len(ps) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(topic)
		b.WriteByte('(')
		b.WriteString(joinInt32s(ps, ","))
		b.WriteByte(')')
	}
	return b.String()
}

// groupOffsetRow is a line of the offset table. A member with nothing
// assigned has a row with Topic "" and Partition -1.
type groupOffsetRow struct {
	Topic     string
	Partition int32
	// Committed is the group's committed offset, End the partition's log
	// end offset (high watermark); -1 when unknown.
	Committed, End int64
	// MemberID, Host and ClientID are the consuming member's, "" when no
	// member is assigned the partition.
	MemberID, Host, ClientID string
}

// groupLag is how far the committed offset is behind the log end offset,
// and whether both are known. It is negative if the log was truncated
// below the commit, as kafka-consumer-groups shows it.
func groupLag(committed, end int64) (int64, bool) {
	if committed < 0 || end < 0 {
		return 0, false
	}
	return end - committed, true
}

// groupMembers decodes the members of a described group. Assignments are
// decoded for the consumer protocol only.
func groupMembers(dg kadm.DescribedGroup) []groupMember {
	var out []groupMember
	for _, m := range dg.Members {
		gm := groupMember{ID: m.MemberID, Host: m.ClientHost, ClientID: m.ClientID}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok && a != nil {
			for _, t := range a.Topics {
				if gm.Assigned == nil {
					gm.Assigned = map[string][]int32{}
				}
				gm.Assigned[t.Topic] = append(gm.Assigned[t.Topic], t.Partitions...)
			}
			for t, ps := range gm.Assigned {
				slices.Sort(ps)
				gm.Assigned[t] = slices.Compact(ps)
			}
		}
		out = append(out, gm)
	}
	return out
}

// coordinatorString formats a coordinator as "host:port (id)".
func coordinatorString(b kadm.BrokerDetail) string {
	if b.Host == "" {
		return fmt.Sprintf("- (%d)", b.NodeID)
	}
	return fmt.Sprintf("%s (%d)", net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), b.NodeID)
}

// buildGroupDescription joins a group's members, its committed offsets
// and the log end offsets of their topics into the offset table, as
// kafka-consumer-groups --describe does: a row per assigned partition
// (committed offset or not), a row per committed partition no member is
// assigned, and a row per member assigned nothing.
func buildGroupDescription(group, state, protocolType, protocol, coordinator string, members []groupMember, commits kadm.OffsetResponses, ends kadm.ListedOffsets) groupDescription {
	d := groupDescription{Group: group, State: state, ProtocolType: protocolType, Protocol: protocol,
		Coordinator: coordinator, Members: members}
	committed := func(topic string, p int32) int64 {
		if o, ok := commits.Lookup(topic, p); ok && o.Err == nil && o.At >= 0 {
			return o.At
		}
		return -1
	}
	end := func(topic string, p int32) int64 {
		if o, ok := ends.Lookup(topic, p); ok && o.Err == nil && o.Offset >= 0 {
			return o.Offset
		}
		return -1
	}
	type tp struct {
		topic string
		p     int32
	}
	assigned := map[tp]bool{}
	var idle []groupOffsetRow
	for _, m := range members {
		if m.partitions() == 0 {
			idle = append(idle, groupOffsetRow{Partition: -1, Committed: -1, End: -1, MemberID: m.ID, Host: m.Host, ClientID: m.ClientID})
			continue
		}
		for topic, ps := range m.Assigned {
			for _, p := range ps {
				assigned[tp{topic, p}] = true
				d.Rows = append(d.Rows, groupOffsetRow{Topic: topic, Partition: p, Committed: committed(topic, p), End: end(topic, p),
					MemberID: m.ID, Host: m.Host, ClientID: m.ClientID})
			}
		}
	}
	commits.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || o.At < 0 || assigned[tp{o.Topic, o.Partition}] {
			return
		}
		d.Rows = append(d.Rows, groupOffsetRow{Topic: o.Topic, Partition: o.Partition, Committed: o.At, End: end(o.Topic, o.Partition)})
	})
	slices.SortFunc(d.Rows, func(a, b groupOffsetRow) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.MemberID, b.MemberID))
	})
	slices.SortFunc(idle, func(a, b groupOffsetRow) int { return cmp.Compare(a.MemberID, b.MemberID) })
	d.Rows = append(d.Rows, idle...)
	return d
}

// printGroupOffsets writes, for each group, a header line and the offset
// table; groups are separated by a blank line.
//
//	Group: g  State: Stable  Protocol: consumer/range  Coordinator: 127.0.0.1:9092 (1)  Members: 2
func printGroupOffsets(w io.Writer, groups []groupDescription) error {
	bw := bufio.NewWriter(w)
	for i, d := range groups {
		if i > 0 {
			bw.WriteByte('\n')
		}
		protocol := "-"
		if d.ProtocolType != "" || d.Protocol != "" {
			protocol = orDash(d.ProtocolType) + "/" + orDash(d.Protocol)
		}
		fmt.Fprintf(bw, "Group: %s  State: %s  Protocol: %s  Coordinator: %s  Members: %d\n",
			d.Group, orDash(d.State), protocol, orDash(d.Coordinator), len(d.Members))
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tCONSUMER-ID\tHOST\tCLIENT-ID\n")
		for _, r := range d.Rows {
			part := "-"
			if r.Partition >= 0 {
				part = strconv.Itoa(int(r.Partition))
			}
			lag := "-"
			if l, ok := groupLag(r.Committed, r.End); ok {
				lag = strconv.FormatInt(l, 10)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Group, orDash(r.Topic), part,
				offsetOrDash(r.Committed), offsetOrDash(r.End), lag, orDash(r.MemberID), orDash(r.Host), orDash(r.ClientID))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// printGroupMembers writes the members of each group, as
// kafka-consumer-groups --describe --members --verbose.
func printGroupMembers(w io.Writer, groups []groupDescription) error {
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "GROUP\tCONSUMER-ID\tGROUP-INSTANCE-ID\tHOST\tCLIENT-ID\t#PARTITIONS\tASSIGNMENT\n")
	for _, d := range groups {
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.Group, m.ID, orDash(m.InstanceID), orDash(m.Host),
				orDash(m.ClientID), m.partitions(), m.assignment())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// printGroupStates writes one line per group, as kafka-consumer-groups
// --describe --state.
func printGroupStates(w io.Writer, groups []groupDescription) error {
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "GROUP\tCOORDINATOR (ID)\tASSIGNMENT-STRATEGY\tSTATE\t#MEMBERS\n")
	for _, d := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", d.Group, orDash(d.Coordinator), orDash(d.Protocol), orDash(d.State), len(d.Members))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

func offsetOrDash(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}

func joinInt32s(ns []int32, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(int(n))
	}
	return strings.Join(s, sep)
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
