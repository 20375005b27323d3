package main

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestAppendRecord(t *testing.T) {
	tests := []struct {
		name       string
		f          recordFormat
		key, value []byte
		want       string
	}{
		{"value only", recordFormat{}, []byte("k"), []byte("hello"), "hello\n"},
		{"key", recordFormat{Key: true}, []byte("k"), []byte("v"), "k\tv\n"},
		{"null key and value", recordFormat{Key: true}, nil, nil, "null\tnull\n"},
		{"empty value is not null", recordFormat{}, nil, []byte{}, "\n"},
		{"offset", recordFormat{Offset: true}, nil, []byte("v"), "Offset:42\tv\n"},
		{"everything", recordFormat{Partition: true, Offset: true, Key: true}, []byte("k"), []byte("v"), "Partition:3\tOffset:42\tk\tv\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(tt.f.appendRecord(nil, 3, 42, tt.key, tt.value))
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTopicList(t *testing.T) {
	details := kadm.TopicDetails{
		"b":                  {Topic: "b"},
		"__consumer_offsets": {Topic: "__consumer_offsets", IsInternal: true},
		"a":                  {Topic: "a"},
	}
	tests := []struct {
		excludeInternal bool
		want            string
	}{
		{false, "__consumer_offsets\na\nb\n"},
		{true, "a\nb\n"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := printTopicList(&buf, topicNames(details, tt.excludeInternal)); err != nil {
			t.Fatal(err)
		}
		if got := buf.String(); got != tt.want {
			t.Errorf("excludeInternal=%v: got %q, want %q", tt.excludeInternal, got, tt.want)
		}
	}
	if got := topicNames(nil, false); !reflect.DeepEqual(got, []string(nil)) {
		t.Errorf("topicNames(nil) = %q, want nil", got)
	}
}

func TestCountLines(t *testing.T) {
	tests := []struct{ got, want string }{
		{producedLine(1, "t"), "Produced 1 record to topic t.\n"},
		{producedLine(3, "t"), "Produced 3 records to topic t.\n"},
		{consumedLine(1), "Processed a total of 1 messages\n"},
		{consumedLine(0), "Processed a total of 0 messages\n"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
