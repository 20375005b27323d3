package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestElectRequestFlags(t *testing.T) {
	tests := []struct {
		name string
		e    electOptions
		how  kadm.ElectLeadersHow
		set  string
		bad  bool
	}{
		{"all partitions", electOptions{electionType: "preferred", all: true, partition: -1}, kadm.ElectPreferredReplica, "map[]", false},
		{"one topic", electOptions{electionType: "preferred", topic: "t", partition: -1}, kadm.ElectPreferredReplica, "map[t:map[]]", false},
		{"one partition, unclean", electOptions{electionType: "UNCLEAN", topic: "t", partition: 2}, kadm.ElectLiveReplica, "map[t:map[2:{}]]", false},
		{"nothing named", electOptions{electionType: "preferred", partition: -1}, 0, "", true},
		{"both", electOptions{electionType: "preferred", all: true, topic: "t", partition: -1}, 0, "", true},
		{"bad type", electOptions{electionType: "random", all: true}, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			how, set, err := tt.e.request()
			if (err != nil) != tt.bad {
				t.Fatalf("error %v, want error %v", err, tt.bad)
			}
			if tt.bad {
				return
			}
			if how != tt.how || fmtSet(set) != tt.set {
				t.Fatalf("got %v %s, want %v %s", how, fmtSet(set), tt.how, tt.set)
			}
		})
	}
}

func fmtSet(s kadm.TopicsSet) string {
	var b bytes.Buffer
	b.WriteString("map[")
	first := true
	for topic, ps := range s {
		if !first {
			b.WriteString(" ")
		}
		first = false
		b.WriteString(topic + ":map[")
		for p := range ps {
			b.WriteString(string(rune('0'+p)) + ":{}")
		}
		b.WriteString("]")
	}
	b.WriteString("]")
	return b.String()
}

func TestPrintElections(t *testing.T) {
	res := kadm.ElectLeadersResults{
		"b": {1: {Topic: "b", Partition: 1}},
		"a": {
			3: {Topic: "a", Partition: 3, Err: kerr.ElectionNotNeeded},
			0: {Topic: "a", Partition: 0},
		},
	}
	var out bytes.Buffer
	if err := printElections(&out, res); err != nil {
		t.Fatal(err)
	}
	want := "Successfully completed leader election for partition a-0\n" +
		"Election for partition a-3: " + kerr.ElectionNotNeeded.Error() + "\n" +
		"Successfully completed leader election for partition b-1\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	if !errors.Is(res["a"][3].Err, kerr.ElectionNotNeeded) {
		t.Fatal("fixture changed")
	}
}
