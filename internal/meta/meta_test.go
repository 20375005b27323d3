package meta

import (
	"strings"
	"testing"
)

func TestNewTopicID(t *testing.T) {
	seen := map[TopicID]bool{}
	for range 2000 {
		id := NewTopicID()
		s := id.String()
		if strings.HasPrefix(s, "-") {
			t.Fatalf("topic id %s starts with '-'", s)
		}
		if len(s) != 22 || id.IsZero() || seen[id] {
			t.Fatalf("bad or repeated topic id %q", s)
		}
		seen[id] = true
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("%s is not a version-4 variant-1 UUID", s)
		}
		back, err := ParseTopicID(s)
		if err != nil || back != id {
			t.Fatalf("ParseTopicID(%q) = %v, %v", s, back, err)
		}
	}
	if _, err := ParseTopicID("not-an-id"); err == nil {
		t.Fatal("ParseTopicID accepted garbage")
	}
}

func TestCloneIsDeep(t *testing.T) {
	orig := Topic{Name: "t", Partitions: [][]int32{{1, 2}}, Configs: map[string]string{"a": "1"}}
	c := orig.Clone()
	c.Partitions[0][0] = 9
	c.Configs["a"] = "2"
	if orig.Partitions[0][0] != 1 || orig.Configs["a"] != "1" {
		t.Fatalf("Clone shares memory with the original: %+v", orig)
	}
	st := PartitionState{ISR: []int32{1, 2}}
	sc := st.Clone()
	sc.ISR[0] = 7
	if st.ISR[0] != 1 {
		t.Fatal("PartitionState.Clone shares the ISR")
	}
}
