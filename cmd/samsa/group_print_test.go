package main

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestParseTopicPartitions(t *testing.T) {
	tests := []struct {
		in      string
		want    topicPartitions
		wantErr string
	}{
		{"t", topicPartitions{Topic: "t"}, ""},
		{"t:0", topicPartitions{Topic: "t", Partitions: []int32{0}}, ""},
		{"t:2,0,1", topicPartitions{Topic: "t", Partitions: []int32{0, 1, 2}}, ""},
		{"t: 1 ,1", topicPartitions{Topic: "t", Partitions: []int32{1}}, ""},
		{"", topicPartitions{}, "want a topic name"},
		{":0", topicPartitions{}, "want a topic name"},
		{"t:", topicPartitions{}, `partition "" is not a number`},
		{"t:0,x", topicPartitions{}, `partition "x" is not a number`},
		{"t:-1", topicPartitions{}, `partition "-1" is not a number >= 0`},
		{"t:99999999999", topicPartitions{}, "is not a number"},
	}
	for _, tt := range tests {
		got, err := parseTopicPartitions(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseTopicPartitions(%q): err = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseTopicPartitions(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseDatetime(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	tests := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"2026-01-02T15:04:05Z", time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), false},
		{"2026-01-02T15:04:05.250Z", time.Date(2026, 1, 2, 15, 4, 5, 250e6, time.UTC), false},
		{"2026-01-02T15:04:05+01:00", time.Date(2026, 1, 2, 14, 4, 5, 0, time.UTC), false},
		{"2026-01-02T15:04:05.000-0100", time.Date(2026, 1, 2, 16, 4, 5, 0, time.UTC), false},
		// Zone-less: Kafka reads it in the local zone (loc here).
		{"2026-01-02T15:04:05", time.Date(2026, 1, 2, 13, 4, 5, 0, time.UTC), false},
		{"2026-01-02T15:04:05.5", time.Date(2026, 1, 2, 13, 4, 5, 500e6, time.UTC), false},
		{"2026-01-02", time.Time{}, true},
		{"yesterday", time.Time{}, true},
		{"2026-13-02T15:04:05Z", time.Time{}, true},
		{"", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := parseDatetime(tt.in, loc)
		if tt.bad {
			if err == nil || !strings.Contains(err.Error(), "invalid --to-datetime") {
				t.Errorf("parseDatetime(%q) = %v, %v; want an invalid --to-datetime error", tt.in, got, err)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("parseDatetime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestGroupLag(t *testing.T) {
	tests := []struct {
		committed, end int64
		lag            int64
		ok             bool
	}{
		{3, 10, 7, true},
		{10, 10, 0, true},
		{0, 0, 0, true},
		{12, 10, -2, true}, // log truncated below the commit
		{-1, 10, 0, false}, // nothing committed
		{3, -1, 0, false},  // end unknown
	}
	for _, tt := range tests {
		lag, ok := groupLag(tt.committed, tt.end)
		if lag != tt.lag || ok != tt.ok {
			t.Errorf("groupLag(%d, %d) = %d, %v; want %d, %v", tt.committed, tt.end, lag, ok, tt.lag, tt.ok)
		}
	}
}

// offsetResps builds FetchOffsets results: topic -> partition -> offset.
func offsetResps(m map[string]map[int32]int64) kadm.OffsetResponses {
	out := kadm.OffsetResponses{}
	for topic, ps := range m {
		out[topic] = map[int32]kadm.OffsetResponse{}
		for p, o := range ps {
			out[topic][p] = kadm.OffsetResponse{Offset: kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1}}
		}
	}
	return out
}

// listed builds ListOffsets results: topic -> partition -> offset.
func listed(m map[string]map[int32]int64) kadm.ListedOffsets {
	out := kadm.ListedOffsets{}
	for topic, ps := range m {
		out[topic] = map[int32]kadm.ListedOffset{}
		for p, o := range ps {
			out[topic][p] = kadm.ListedOffset{Topic: topic, Partition: p, Offset: o, Timestamp: -1, LeaderEpoch: -1}
		}
	}
	return out
}

func TestBuildGroupDescription(t *testing.T) {
	members := []groupMember{
		{ID: "m1", Host: "/10.0.0.1", ClientID: "c1", Assigned: map[string][]int32{"a": {0, 1}}},
		{ID: "m0", Host: "/10.0.0.2", ClientID: "c0"}, // assigned nothing
		{ID: "m2", Host: "/10.0.0.3", ClientID: "c2", Assigned: map[string][]int32{"a": {2}, "b": {0}}},
	}
	commits := offsetResps(map[string]map[int32]int64{
		"a": {0: 5, 2: 9},
		"c": {0: 4}, // committed, assigned to nobody
	})
	commits["a"][1] = kadm.OffsetResponse{Offset: kadm.Offset{Topic: "a", Partition: 1, At: -1}} // no commit
	ends := listed(map[string]map[int32]int64{"a": {0: 8, 1: 3, 2: 9}, "c": {0: 10}})
	ends["b"] = map[int32]kadm.ListedOffset{0: {Topic: "b", Err: kerr.NotLeaderForPartition}}

	d := buildGroupDescription("g", "Stable", "consumer", "range", "h:1 (1)", members, commits, ends)
	want := []groupOffsetRow{
		{Topic: "a", Partition: 0, Committed: 5, End: 8, MemberID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
		{Topic: "a", Partition: 1, Committed: -1, End: 3, MemberID: "m1", Host: "/10.0.0.1", ClientID: "c1"},
		{Topic: "a", Partition: 2, Committed: 9, End: 9, MemberID: "m2", Host: "/10.0.0.3", ClientID: "c2"},
		{Topic: "b", Partition: 0, Committed: -1, End: -1, MemberID: "m2", Host: "/10.0.0.3", ClientID: "c2"},
		{Topic: "c", Partition: 0, Committed: 4, End: 10},
		{Partition: -1, Committed: -1, End: -1, MemberID: "m0", Host: "/10.0.0.2", ClientID: "c0"},
	}
	if !reflect.DeepEqual(d.Rows, want) {
		t.Fatalf("rows:\ngot  %+v\nwant %+v", d.Rows, want)
	}

	var buf bytes.Buffer
	if err := printGroupOffsets(&buf, []groupDescription{d, {Group: "e", State: "Empty", Coordinator: "h:1 (1)"}}); err != nil {
		t.Fatal(err)
	}
	wantOut := "Group: g  State: Stable  Protocol: consumer/range  Coordinator: h:1 (1)  Members: 3\n" +
		"GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST       CLIENT-ID\n" +
		"g      a      0          5               8               3    m1           /10.0.0.1  c1\n" +
		"g      a      1          -               3               -    m1           /10.0.0.1  c1\n" +
		"g      a      2          9               9               0    m2           /10.0.0.3  c2\n" +
		"g      b      0          -               -               -    m2           /10.0.0.3  c2\n" +
		"g      c      0          4               10              6    -            -          -\n" +
		"g      -      -          -               -               -    m0           /10.0.0.2  c0\n" +
		"\n" +
		"Group: e  State: Empty  Protocol: -  Coordinator: h:1 (1)  Members: 0\n" +
		"GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID\n"
	if got := buf.String(); got != wantOut {
		t.Errorf("printGroupOffsets:\n%s\nwant:\n%s", got, wantOut)
	}

	buf.Reset()
	members[0].InstanceID = "i1"
	if err := printGroupMembers(&buf, []groupDescription{d}); err != nil {
		t.Fatal(err)
	}
	wantOut = "GROUP  CONSUMER-ID  GROUP-INSTANCE-ID  HOST       CLIENT-ID  #PARTITIONS  ASSIGNMENT\n" +
		"g      m1           i1                 /10.0.0.1  c1         2            a(0,1)\n" +
		"g      m0           -                  /10.0.0.2  c0         0            -\n" +
		"g      m2           -                  /10.0.0.3  c2         2            a(2),b(0)\n"
	if got := buf.String(); got != wantOut {
		t.Errorf("printGroupMembers:\n%s\nwant:\n%s", got, wantOut)
	}

	buf.Reset()
	if err := printGroupStates(&buf, []groupDescription{d}); err != nil {
		t.Fatal(err)
	}
	wantOut = "GROUP  COORDINATOR (ID)  ASSIGNMENT-STRATEGY  STATE   #MEMBERS\n" +
		"g      h:1 (1)           range                Stable  3\n"
	if got := buf.String(); got != wantOut {
		t.Errorf("printGroupStates:\n%s\nwant:\n%s", got, wantOut)
	}
}

func TestPrintGroupList(t *testing.T) {
	var buf bytes.Buffer
	if err := printGroupList(&buf, nil); err != nil || buf.Len() != 0 {
		t.Fatalf("no groups: %q, %v; want nothing", buf.String(), err)
	}
	groups := kadm.ListedGroups{
		"orders": {Group: "orders", State: "Stable", ProtocolType: "consumer"},
		"simple": {Group: "simple", State: "Empty"},
	}
	if err := printGroupList(&buf, groups.Sorted()); err != nil {
		t.Fatal(err)
	}
	want := "GROUP   STATE   PROTOCOL-TYPE\n" +
		"orders  Stable  consumer\n" +
		"simple  Empty   -\n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCoordinatorString(t *testing.T) {
	if got := coordinatorString(kadm.BrokerDetail{NodeID: 2, Host: "::1", Port: 9092}); got != "[::1]:9092 (2)" {
		t.Errorf("got %q", got)
	}
	if got := coordinatorString(kadm.BrokerDetail{NodeID: 2}); got != "- (2)" {
		t.Errorf("got %q", got)
	}
}

func TestResetOptionsParse(t *testing.T) {
	tests := []struct {
		name    string
		r       resetOptions
		changed []string
		spec    resetSpec
		sel     []topicPartitions
		wantErr string
	}{
		{"earliest", resetOptions{group: "g", topics: []string{"t"}, toEarliest: true}, []string{"to-earliest"},
			resetSpec{kind: resetToEarliest}, []topicPartitions{{Topic: "t"}}, ""},
		{"latest, partitions", resetOptions{group: "g", topics: []string{"t:1,0", "u"}, toLatest: true}, []string{"to-latest"},
			resetSpec{kind: resetToLatest}, []topicPartitions{{Topic: "t", Partitions: []int32{0, 1}}, {Topic: "u"}}, ""},
		{"to offset 0", resetOptions{group: "g", allTopics: true}, []string{"to-offset"},
			resetSpec{kind: resetToOffset}, nil, ""},
		{"shift back", resetOptions{group: "g", allTopics: true, shiftBy: -3}, []string{"shift-by"},
			resetSpec{kind: resetShiftBy, n: -3}, nil, ""},
		{"datetime", resetOptions{group: "g", allTopics: true, toDatetime: "2026-01-02T15:04:05Z"}, []string{"to-datetime"},
			resetSpec{kind: resetToDatetime, at: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)}, nil, ""},
		{"no group", resetOptions{allTopics: true, toEarliest: true}, []string{"to-earliest"}, resetSpec{}, nil, "--group"},
		{"no scenario", resetOptions{group: "g", allTopics: true}, nil, resetSpec{}, nil, "say where to reset to"},
		{"two scenarios", resetOptions{group: "g", allTopics: true, toEarliest: true}, []string{"to-earliest", "shift-by"}, resetSpec{}, nil, "exclude each other"},
		{"no partitions", resetOptions{group: "g", toEarliest: true}, []string{"to-earliest"}, resetSpec{}, nil, "--topic, or give --all-topics"},
		{"topic and all", resetOptions{group: "g", allTopics: true, topics: []string{"t"}, toEarliest: true}, []string{"to-earliest"}, resetSpec{}, nil, "exclude each other"},
		{"negative offset", resetOptions{group: "g", allTopics: true, toOffset: -1}, []string{"to-offset"}, resetSpec{}, nil, "want an offset >= 0"},
		{"bad datetime", resetOptions{group: "g", allTopics: true, toDatetime: "now"}, []string{"to-datetime"}, resetSpec{}, nil, "invalid --to-datetime"},
		{"bad topic", resetOptions{group: "g", topics: []string{"t:x"}, toEarliest: true}, []string{"to-earliest"}, resetSpec{}, nil, "invalid --topic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := func(name string) bool {
				for _, c := range tt.changed {
					if c == name {
						return true
					}
				}
				return false
			}
			spec, sel, err := tt.r.parse(changed, time.UTC)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(spec, tt.spec) || !reflect.DeepEqual(sel, tt.sel) {
				t.Fatalf("got %+v %+v %v; want %+v %+v", spec, sel, err, tt.spec, tt.sel)
			}
		})
	}
}

func TestResetPartitions(t *testing.T) {
	details := kadm.TopicDetails{
		"t": {Topic: "t", Partitions: kadm.PartitionDetails{0: {}, 1: {}, 2: {}}},
		"u": {Topic: "u", Partitions: kadm.PartitionDetails{0: {}}},
	}
	commits := offsetResps(map[string]map[int32]int64{"u": {0: 1}, "t": {2: 4}})
	tests := []struct {
		name    string
		sel     []topicPartitions
		want    string
		wantErr string
	}{
		{"committed partitions", nil, "[{t 2} {u 0}]", ""},
		{"whole topics", []topicPartitions{{Topic: "u"}, {Topic: "t"}}, "[{t 0} {t 1} {t 2} {u 0}]", ""},
		{"some partitions, repeated", []topicPartitions{{Topic: "t", Partitions: []int32{2, 0}}, {Topic: "t", Partitions: []int32{0}}}, "[{t 0} {t 2}]", ""},
		{"missing partition", []topicPartitions{{Topic: "t", Partitions: []int32{3}}}, "", `topic "t" has no partition 3 (it has 3)`},
		{"missing topic", []topicPartitions{{Topic: "v"}}, "", `topic "v" does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resetPartitions(tt.sel, details, commits)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tt.want {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestPlanReset(t *testing.T) {
	parts := []kadm.Partition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}
	// Partition 0 holds offsets [2, 10), partition 1 [0, 5).
	start := listed(map[string]map[int32]int64{"t": {0: 2, 1: 0}})
	end := listed(map[string]map[int32]int64{"t": {0: 10, 1: 5}})
	commits := offsetResps(map[string]map[int32]int64{"t": {0: 4, 1: 5}})
	byTime := listed(map[string]map[int32]int64{"t": {0: 7, 1: 5}})
	tests := []struct {
		name    string
		spec    resetSpec
		commits kadm.OffsetResponses
		want    string
		wantErr string
	}{
		{"earliest", resetSpec{kind: resetToEarliest}, commits, "[{t 0 2} {t 1 0}]", ""},
		{"latest", resetSpec{kind: resetToLatest}, commits, "[{t 0 10} {t 1 5}]", ""},
		{"to offset, clamped", resetSpec{kind: resetToOffset, n: 1}, commits, "[{t 0 2} {t 1 1}]", ""},
		{"to offset beyond the end", resetSpec{kind: resetToOffset, n: 8}, commits, "[{t 0 8} {t 1 5}]", ""},
		{"datetime", resetSpec{kind: resetToDatetime}, commits, "[{t 0 7} {t 1 5}]", ""},
		{"shift forward", resetSpec{kind: resetShiftBy, n: 3}, commits, "[{t 0 7} {t 1 5}]", ""},
		{"shift back", resetSpec{kind: resetShiftBy, n: -3}, commits, "[{t 0 2} {t 1 2}]", ""},
		{"shift overflow", resetSpec{kind: resetShiftBy, n: 1<<63 - 1}, commits, "[{t 0 10} {t 1 5}]", ""},
		{"shift without a commit", resetSpec{kind: resetShiftBy, n: 1},
			offsetResps(map[string]map[int32]int64{"t": {0: 4}}), "", "cannot shift the offset of t-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planReset(tt.spec, parts, tt.commits, start, end, byTime)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tt.want {
				t.Fatalf("got %v, %v; want %s", got, err, tt.want)
			}
		})
	}

	// A partition whose offsets could not be listed fails the plan.
	bad := listed(map[string]map[int32]int64{"t": {0: 2}})
	bad["t"][1] = kadm.ListedOffset{Topic: "t", Partition: 1, Err: kerr.NotLeaderForPartition}
	if _, err := planReset(resetSpec{kind: resetToEarliest}, parts, commits, bad, end, nil); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Errorf("unlisted start offset: err = %v", err)
	}

	var buf bytes.Buffer
	plan, _ := planReset(resetSpec{kind: resetToLatest}, parts, commits, start, end, nil)
	if err := printResetPlan(&buf, "g", plan); err != nil {
		t.Fatal(err)
	}
	want := "GROUP  TOPIC  PARTITION  NEW-OFFSET\n" +
		"g      t      0          10\n" +
		"g      t      1          5\n"
	if got := buf.String(); got != want {
		t.Errorf("printResetPlan:\n%s\nwant:\n%s", got, want)
	}
}

func TestCheckGroupInactive(t *testing.T) {
	for _, state := range []string{"Empty", "Dead"} {
		if err := checkGroupInactive(kadm.DescribedGroup{Group: "g", State: state}); err != nil {
			t.Errorf("state %s: %v", state, err)
		}
	}
	err := checkGroupInactive(kadm.DescribedGroup{Group: "g", State: "Stable", Members: make([]kadm.DescribedGroupMember, 2)})
	if err == nil || !strings.Contains(err.Error(), `consumer group "g" is not inactive (state Stable, 2 members)`) {
		t.Errorf("stable group: err = %v", err)
	}
}

func TestPrintDeletedOffsets(t *testing.T) {
	parts := []kadm.Partition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}}
	resps := kadm.DeleteOffsetsResponses{"t": {0: nil, 1: kerr.GroupSubscribedToTopic}}
	var buf bytes.Buffer
	err := printDeletedOffsets(&buf, parts, resps)
	if !errors.Is(err, kerr.GroupSubscribedToTopic) || !strings.Contains(err.Error(), "t-2: no answer") {
		t.Errorf("err = %v", err)
	}
	want := "TOPIC  PARTITION  STATUS\n" +
		"t      0          Successful\n" +
		"t      1          Error: " + kerr.GroupSubscribedToTopic.Error() + "\n" +
		"t      2          Error: no answer for it\n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
