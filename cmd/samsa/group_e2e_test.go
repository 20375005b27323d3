package main

// End-to-end test of `samsa group` against a real in-process broker with a
// franz-go group consumer.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
	samsatest "github.com/samsa-io/samsa/test"
)

// startGroupBroker starts a broker whose group coordinator rebalances
// without delay.
func startGroupBroker(t *testing.T) *samsatest.Broker {
	return samsatest.StartBroker(t, func(cfg *broker.Config) {
		cfg.Groups.InitialRebalanceDelay = 0
		cfg.Groups.MinSessionTimeout = time.Second
		cfg.Groups.Partitions = 5
	})
}

// tableRows splits a table printed with tabwriter into the fields of each
// line, header included.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Fields(line))
		}
	}
	return rows
}

// wantRows compares a printed table with the wanted rows (header
// included), field by field.
func wantRows(t *testing.T, what, out string, want [][]string) {
	t.Helper()
	got := tableRows(out)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\ngot  %q\nwant %q\noutput:\n%s", what, got, want, out)
	}
}

// fetchCommitted returns the group's committed offset per partition of
// topic, asked of the broker with kadm.
func fetchCommitted(ctx context.Context, t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resps, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	got := map[int32]int64{}
	for p, r := range resps[topic] {
		if r.Err != nil {
			t.Fatalf("FetchOffsets %s-%d: %v", topic, p, r.Err)
		}
		got[p] = r.At
	}
	return got
}

// TestE2EGroup produces to a 3-partition topic, has a group consumer
// commit part of it, and checks list, describe (offsets, lag, members,
// state), reset-offsets (dry run and --execute), delete-offsets and delete.
func TestE2EGroup(t *testing.T) {
	b := startGroupBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	c := &e2eCLI{t: t, ctx: ctx, addr: b.Addr}
	const topic, group = "gt", "g1"

	c.ok("Created topic gt.\n", "topic", "create", topic, "--partitions", "3")
	c.ok("", "group", "list")

	// Partition p gets produced[p] records; the consumer commits the first
	// committed[p] of them.
	produced := map[int32]int64{0: 10, 1: 15, 2: 20}
	committed := map[int32]int64{0: 3, 1: 5, 2: 7}
	total := int64(0)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	for p, n := range produced {
		for i := range n {
			r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)}
			if err := pcl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		total += n
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID("e2e-consumer"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var toCommit []*kgo.Record
	seen := int64(0)
	for seen < total {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", seen, total, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			if r.Offset < committed[r.Partition] {
				toCommit = append(toCommit, r)
			}
		})
	}
	if err := consumer.CommitRecords(ctx, toCommit...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	adm := kadm.NewClient(pcl)
	if got := fetchCommitted(ctx, t, adm, group, topic); fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Fatalf("committed %v, want %v", got, committed)
	}

	// While the consumer is a member: it owns the three partitions, and the
	// offsets cannot be reset.
	out, errOut, err := c.run("", "group", "describe", group, "--members")
	if err != nil {
		t.Fatalf("describe --members: %v (stderr %q)", err, errOut)
	}
	rows := tableRows(out)
	if len(rows) != 2 || len(rows[1]) != 7 || rows[1][0] != group || rows[1][2] != "-" ||
		rows[1][4] != "e2e-consumer" || rows[1][5] != "3" || rows[1][6] != "gt(0,1,2)" {
		t.Fatalf("describe --members:\n%s", out)
	}
	memberID := rows[1][1]
	t.Logf("samsa group describe %s --members:\n%s", group, out)
	out, _, err = c.run("", "group", "describe", group)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "Group: g1  State: Stable  Protocol: consumer/") || !strings.Contains(out, "  Members: 1\n") {
		t.Errorf("describe header:\n%s", out)
	}
	for p := range int32(3) {
		want := fmt.Sprintf("%s %s %d %d %d %d %s", group, topic, p, committed[p], produced[p], produced[p]-committed[p], memberID)
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("describe has no row %q:\n%s", want, out)
		}
	}
	_, _, err = c.run("", "group", "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	if err == nil || !strings.Contains(err.Error(), `consumer group "g1" is not inactive (state Stable, 1 member)`) {
		t.Errorf("reset --execute of an active group: err = %v", err)
	}
	consumer.Close() // leaves the group

	c.eventually("GROUP  STATE  PROTOCOL-TYPE\ng1     Empty  consumer\n", "group", "list")

	// describe: offsets and lag computed from what was produced and
	// committed; no member.
	describeRows := func(current map[int32]int64) [][]string {
		want := [][]string{{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}}
		for p := range int32(3) {
			cur, lag := "-", "-"
			if o, ok := current[p]; ok {
				cur, lag = fmt.Sprint(o), fmt.Sprint(produced[p]-o)
			}
			want = append(want, []string{group, topic, fmt.Sprint(p), cur, fmt.Sprint(produced[p]), lag, "-", "-", "-"})
		}
		return want
	}
	out, errOut, err = c.run("", "group", "describe", group)
	if err != nil || errOut != "" {
		t.Fatalf("describe: %v (stderr %q)", err, errOut)
	}
	t.Logf("samsa group describe %s:\n%s", group, out)
	header, table, _ := strings.Cut(out, "\n")
	wantHeader := fmt.Sprintf("Group: g1  State: Empty  Protocol: consumer/-  Coordinator: %s (1)  Members: 0", b.Addr)
	if header != wantHeader {
		t.Errorf("describe header %q, want %q", header, wantHeader)
	}
	wantRows(t, "describe", table, describeRows(committed))
	out, _, err = c.run("", "group", "describe", group, "--state")
	if err != nil {
		t.Fatal(err)
	}
	wantRows(t, "describe --state", out, [][]string{
		{"GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"},
		{group, b.Addr, "(1)", "-", "Empty", "0"},
	})

	// Unknown groups.
	_, _, err = c.run("", "group", "describe", "nosuch")
	if !errors.Is(err, errGroupNotFound) || !strings.Contains(err.Error(), `consumer group "nosuch" does not exist`) {
		t.Errorf("describe nosuch: err = %v", err)
	}
	out, _, err = c.run("", "group", "describe", group, "nosuch", "--state")
	if !errors.Is(err, errGroupNotFound) || !strings.Contains(out, "Empty") {
		t.Errorf("describe g1 nosuch: out %q, err %v; want g1 described and an error about nosuch", out, err)
	}

	// Dry runs print the plan and change nothing.
	resetHeader := []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}
	dryRun := func(want [][]string, args ...string) {
		t.Helper()
		out, errOut, err := c.run("", append([]string{"group", "reset-offsets", "--group", group}, args...)...)
		if err != nil {
			t.Fatalf("reset-offsets %s: %v", strings.Join(args, " "), err)
		}
		if !strings.Contains(errOut, "Dry run") {
			t.Errorf("reset-offsets %s: stderr %q does not say it is a dry run", strings.Join(args, " "), errOut)
		}
		wantRows(t, "reset-offsets "+strings.Join(args, " "), out, append([][]string{resetHeader}, want...))
		if got := fetchCommitted(ctx, t, adm, group, topic); fmt.Sprint(got) != fmt.Sprint(committed) {
			t.Fatalf("after a dry run: committed %v, want %v", got, committed)
		}
	}
	allAt := func(at func(p int32) int64) [][]string {
		var rows [][]string
		for p := range int32(3) {
			rows = append(rows, []string{group, topic, fmt.Sprint(p), fmt.Sprint(at(p))})
		}
		return rows
	}
	dryRun(allAt(func(int32) int64 { return 0 }), "--topic", topic, "--to-earliest")
	dryRun(allAt(func(p int32) int64 { return produced[p] }), "--all-topics", "--to-latest")
	dryRun(allAt(func(p int32) int64 { return min(committed[p]+4, produced[p]) }), "--all-topics", "--shift-by", "4")
	dryRun(allAt(func(int32) int64 { return 0 }), "--topic", topic, "--shift-by", "-100")
	dryRun([][]string{{group, topic, "1", "12"}, {group, topic, "2", "12"}}, "--topic", "gt:1,2", "--to-offset", "12")
	dryRun(allAt(func(int32) int64 { return 0 }), "--topic", topic, "--to-datetime", "2000-01-01T00:00:00Z")
	dryRun(allAt(func(p int32) int64 { return produced[p] }), "--topic", topic, "--to-datetime", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))

	if _, _, err := c.run("", "group", "reset-offsets", "--group", group, "--topic", "gt:3", "--to-earliest"); err == nil ||
		!strings.Contains(err.Error(), `topic "gt" has no partition 3`) {
		t.Errorf("reset of a partition that does not exist: err = %v", err)
	}
	if _, _, err := c.run("", "group", "reset-offsets", "--group", group, "--topic", "nosuch", "--to-earliest"); err == nil ||
		!strings.Contains(err.Error(), `topic "nosuch" does not exist`) {
		t.Errorf("reset of a topic that does not exist: err = %v", err)
	}

	// --execute commits.
	out, errOut, err = c.run("", "group", "reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	if err != nil || errOut != "" {
		t.Fatalf("reset-offsets --execute: %v (stderr %q)", err, errOut)
	}
	wantRows(t, "reset-offsets --execute", out, append([][]string{resetHeader}, allAt(func(int32) int64 { return 0 })...))
	zeros := map[int32]int64{0: 0, 1: 0, 2: 0}
	if got := fetchCommitted(ctx, t, adm, group, topic); fmt.Sprint(got) != fmt.Sprint(zeros) {
		t.Fatalf("after --execute: committed %v, want %v", got, zeros)
	}
	out, _, err = c.run("", "group", "describe", group)
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ = strings.Cut(out, "\n")
	wantRows(t, "describe after reset", table, describeRows(zeros))

	// A group consumer now reads everything again, from the start.
	out, errOut, err = c.run("", "consume", topic, "--group", group, "--max-messages", fmt.Sprint(total), "--timeout", "20s")
	if err != nil {
		t.Fatalf("consume after reset: %v (stderr %q)", err, errOut)
	}
	if got := strings.Count(out, "\n"); int64(got) != total {
		t.Fatalf("consumed %d records after the reset, want %d", got, total)
	}
	for p, n := range produced {
		for i := range n {
			if !strings.Contains(out, fmt.Sprintf("p%d-%d\n", p, i)) {
				t.Fatalf("record p%d-%d not consumed again after the reset", p, i)
			}
		}
	}
	samsatest.WaitFor(t, 20*time.Second, func() error {
		out, _, err := c.run("", "group", "describe", group)
		if err != nil {
			return err
		}
		_, table, _ := strings.Cut(out, "\n")
		if got, want := fmt.Sprint(tableRows(table)), fmt.Sprint(describeRows(produced)); got != want {
			return fmt.Errorf("describe after consuming all:\ngot  %s\nwant %s", got, want)
		}
		return nil
	})

	// delete-offsets of one partition.
	c.eventually("GROUP  STATE  PROTOCOL-TYPE\ng1     Empty  consumer\n", "group", "list")
	out, _, err = c.run("", "group", "delete-offsets", "--group", group, "--topic", "gt:2")
	if err != nil {
		t.Fatalf("delete-offsets: %v", err)
	}
	wantRows(t, "delete-offsets", out, [][]string{{"TOPIC", "PARTITION", "STATUS"}, {topic, "2", "Successful"}})
	if got, want := fetchCommitted(ctx, t, adm, group, topic), map[int32]int64{0: 10, 1: 15}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after delete-offsets: committed %v, want %v", got, want)
	}

	// delete.
	c.ok("Deleted consumer group g1.\n", "group", "delete", group)
	c.eventually("", "group", "list")
	if _, _, err := c.run("", "group", "describe", group); !errors.Is(err, errGroupNotFound) {
		t.Errorf("describe of a deleted group: err = %v, want it to say the group does not exist", err)
	}
	if _, _, err := c.run("", "group", "delete", group); !errors.Is(err, errGroupNotFound) {
		t.Errorf("deleting a deleted group: err = %v, want it to say the group does not exist", err)
	}
	if _, _, err := c.run("", "group", "reset-offsets", "--group", "nosuch", "--all-topics", "--to-earliest"); !errors.Is(err, errGroupNotFound) {
		t.Errorf("reset --all-topics of an unknown group: err = %v", err)
	}
}
