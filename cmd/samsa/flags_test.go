package main

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseBootstrap(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"localhost:9092", []string{"localhost:9092"}, false},
		{" a:1, b:2 ,,c:3", []string{"a:1", "b:2", "c:3"}, false},
		{"", nil, true},
		{" , ", nil, true},
	}
	for _, tt := range tests {
		got, err := parseBootstrap(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseBootstrap(%q) = %q, %v; want %q, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseConfigPairs(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    map[string]string
		wantErr string
	}{
		{"none", nil, map[string]string{}, ""},
		{"simple", []string{"retention.ms=1000", "cleanup.policy=delete"},
			map[string]string{"retention.ms": "1000", "cleanup.policy": "delete"}, ""},
		{"value keeps later equals signs", []string{"a=b=c"}, map[string]string{"a": "b=c"}, ""},
		{"empty value", []string{"a="}, map[string]string{"a": ""}, ""},
		{"no equals", []string{"retention.ms"}, nil, "want key=value"},
		{"empty key", []string{"=1"}, nil, "want key=value"},
		{"duplicate", []string{"a=1", "a=2"}, nil, "more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfigPairs(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			flat := make(map[string]string, len(got))
			for k, v := range got {
				flat[k] = *v
			}
			if !reflect.DeepEqual(flat, tt.want) {
				t.Errorf("got %v, want %v", flat, tt.want)
			}
		})
	}
}

func TestBuildAlterConfigs(t *testing.T) {
	got, err := buildAlterConfigs([]string{"retention.ms=5", "a.b=x"}, []string{"segment.bytes", "segment.bytes"})
	if err != nil {
		t.Fatal(err)
	}
	type alt struct {
		Op    kadm.IncrementalOp
		Name  string
		Value string
	}
	var flat []alt
	for _, a := range got {
		v := "<nil>"
		if a.Value != nil {
			v = *a.Value
		}
		flat = append(flat, alt{a.Op, a.Name, v})
	}
	want := []alt{
		{kadm.SetConfig, "a.b", "x"},
		{kadm.SetConfig, "retention.ms", "5"},
		{kadm.DeleteConfig, "segment.bytes", "<nil>"},
	}
	if !reflect.DeepEqual(flat, want) {
		t.Errorf("got %+v, want %+v", flat, want)
	}

	for _, tc := range []struct {
		set, del []string
		wantErr  string
	}{
		{[]string{"a=1"}, []string{"a"}, "both set and deleted"},
		{nil, []string{"a=1"}, "want a config name"},
		{nil, []string{""}, "want a config name"},
		{[]string{"bad"}, nil, "want key=value"},
	} {
		if _, err := buildAlterConfigs(tc.set, tc.del); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("buildAlterConfigs(%q, %q) err = %v, want %q", tc.set, tc.del, err, tc.wantErr)
		}
	}
}

func TestParseAcks(t *testing.T) {
	tests := []struct {
		in      string
		want    kgo.Acks
		wantErr bool
	}{
		{"all", kgo.AllISRAcks(), false},
		{"ALL", kgo.AllISRAcks(), false},
		{"-1", kgo.AllISRAcks(), false},
		{"1", kgo.LeaderAck(), false},
		{"0", kgo.NoAck(), false},
		{"2", kgo.Acks{}, true},
		{"", kgo.Acks{}, true},
	}
	for _, tt := range tests {
		got, err := parseAcks(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseAcks(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseCompression(t *testing.T) {
	tests := []struct {
		in      string
		want    kgo.CompressionCodec
		wantErr bool
	}{
		{"none", kgo.NoCompression(), false},
		{"gzip", kgo.GzipCompression(), false},
		{"snappy", kgo.SnappyCompression(), false},
		{"LZ4", kgo.Lz4Compression(), false},
		{"zstd", kgo.ZstdCompression(), false},
		{"brotli", kgo.CompressionCodec{}, true},
	}
	for _, tt := range tests {
		got, err := parseCompression(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseCompression(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseStartOffset(t *testing.T) {
	tests := []struct {
		in      string
		want    startOffset
		wantErr bool
	}{
		{"earliest", startOffset{kind: "earliest"}, false},
		{"latest", startOffset{kind: "latest"}, false},
		{"0", startOffset{kind: "exact", at: 0}, false},
		{"42", startOffset{kind: "exact", at: 42}, false},
		{"-1", startOffset{}, true},
		{"soon", startOffset{}, true},
	}
	for _, tt := range tests {
		got, err := parseStartOffset(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseStartOffset(%q) = %+v, %v; want %+v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestConsumeStart(t *testing.T) {
	tests := []struct {
		name    string
		o       consumeOptions
		want    startOffset
		wantErr string
	}{
		{"default is latest", consumeOptions{partition: -1}, startOffset{kind: "latest"}, ""},
		{"from beginning", consumeOptions{partition: -1, fromBeginning: true}, startOffset{kind: "earliest"}, ""},
		{"earliest with group", consumeOptions{partition: -1, offset: "earliest", group: "g"}, startOffset{kind: "earliest"}, ""},
		{"exact with partition", consumeOptions{partition: 2, offset: "7"}, startOffset{kind: "exact", at: 7}, ""},
		{"exact needs partition", consumeOptions{partition: -1, offset: "7"}, startOffset{}, "needs --partition"},
		{"exact not with group", consumeOptions{partition: -1, offset: "7", group: "g"}, startOffset{}, "cannot be used with --group"},
		{"group and partition", consumeOptions{partition: 0, group: "g"}, startOffset{}, "cannot be used together"},
		{"bad offset", consumeOptions{partition: -1, offset: "x"}, startOffset{}, "invalid --offset"},
		{"negative max", consumeOptions{partition: -1, maxMessages: -1}, startOffset{}, "--max-messages"},
		{"negative timeout", consumeOptions{partition: -1, timeout: -time.Second}, startOffset{}, "--timeout"},
		{"bad partition", consumeOptions{partition: -2}, startOffset{}, "--partition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.o.start()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("start() = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestIdleDeadline(t *testing.T) {
	start := time.Unix(1000, 0)
	o := consumeOptions{timeout: 2 * time.Second}
	tests := []struct {
		name         string
		lastData     time.Time
		assignedAt   time.Time
		want         time.Time
		wantAssigned bool
	}{
		{"not yet assigned waits for the join", time.Time{}, time.Time{}, start.Add(groupJoinTimeout), false},
		{"idle since assignment", time.Time{}, start.Add(5 * time.Second), start.Add(7 * time.Second), true},
		{"idle since last record", start.Add(9 * time.Second), start.Add(5 * time.Second), start.Add(11 * time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nanos int64
			if !tt.assignedAt.IsZero() {
				nanos = tt.assignedAt.UnixNano()
			}
			got, assigned := o.idleDeadline(start, tt.lastData, nanos)
			if !got.Equal(tt.want) || assigned != tt.wantAssigned {
				t.Errorf("idleDeadline = %v, %v; want %v, %v", got, assigned, tt.want, tt.wantAssigned)
			}
		})
	}
}

func TestProduceClientOpts(t *testing.T) {
	base := produceOptions{acks: "all", compression: "none", idempotent: true, partition: -1, timeout: time.Second, linger: time.Millisecond}
	tests := []struct {
		name          string
		mod           func(*produceOptions)
		idempotentSet bool
		wantErr       string
	}{
		{"defaults", func(*produceOptions) {}, false, ""},
		{"acks 1 turns idempotence off silently", func(o *produceOptions) { o.acks = "1" }, false, ""},
		{"acks 1 with explicit --idempotent", func(o *produceOptions) { o.acks = "1" }, true, "requires --acks all"},
		{"acks 0 with --idempotent=false", func(o *produceOptions) { o.acks = "0"; o.idempotent = false }, true, ""},
		{"bad acks", func(o *produceOptions) { o.acks = "most" }, false, "--acks"},
		{"bad compression", func(o *produceOptions) { o.compression = "rar" }, false, "--compression"},
		{"bad partition", func(o *produceOptions) { o.partition = -3 }, false, "--partition"},
		{"zero timeout", func(o *produceOptions) { o.timeout = 0 }, false, "--timeout"},
		{"negative linger", func(o *produceOptions) { o.linger = -1 }, false, "--linger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.mod(&o)
			opts, err := o.clientOpts(tt.idempotentSet)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The options must be accepted by franz-go together.
			cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
			if err != nil {
				t.Fatalf("kgo rejects the options: %v", err)
			}
			cl.Close()
		})
	}
}

func TestSplitKeyValue(t *testing.T) {
	tests := []struct {
		line, sep  string
		key, value string
		wantErr    bool
	}{
		{"k:v", ":", "k", "v", false},
		{"k:v:w", ":", "k", "v:w", false},
		{":v", ":", "", "v", false},
		{"k::v", "::", "k", "v", false},
		{"kv", ":", "", "", true},
	}
	for _, tt := range tests {
		k, v, err := splitKeyValue(tt.line, tt.sep)
		if (err != nil) != tt.wantErr || string(k) != tt.key || string(v) != tt.value {
			t.Errorf("splitKeyValue(%q, %q) = %q, %q, %v; want %q, %q, err %v", tt.line, tt.sep, k, v, err, tt.key, tt.value, tt.wantErr)
		}
	}
	// An empty key is an empty key, not a missing one.
	if k, _, _ := splitKeyValue(":v", ":"); k == nil {
		t.Error("empty key came back nil (would be produced as a null key)")
	}
}

func TestReadLines(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty input", "", nil},
		{"trailing newline", "a\nb\n", []string{"a", "b"}},
		{"no trailing newline", "a\nb", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"empty lines are records", "\n\nx\n", []string{"", "", "x"}},
		{"long line", strings.Repeat("x", 200_000) + "\n", []string{strings.Repeat("x", 200_000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := readLines(context.Background(), strings.NewReader(tt.in), func(s string) error {
				got = append(got, s)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %d lines %q, want %d lines %q", len(got), trunc(got), len(tt.want), trunc(tt.want))
			}
		})
	}
}

func trunc(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 20 {
			s = s[:20] + "..."
		}
		out[i] = s
	}
	return out
}

func TestReadLinesStopsOnCancel(t *testing.T) {
	// A reader that never returns, like a terminal nobody types into.
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	errc := make(chan error, 1)
	go func() { errc <- readLines(ctx, pr, func(string) error { return nil }) }()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("readLines kept waiting for input after cancellation")
	}
}

func TestReadLinesStopsOnCallbackError(t *testing.T) {
	want := errors.New("bad line")
	n := 0
	err := readLines(context.Background(), strings.NewReader("a\nb\nc\n"), func(string) error {
		n++
		return want
	})
	if !errors.Is(err, want) || n != 1 {
		t.Errorf("err = %v after %d lines, want %v after 1", err, n, want)
	}
}

// `user scram set` refuses iterations outside Kafka's range before it
// derives anything: a huge count would keep PBKDF2 busy for hours.
func TestUserScramSetIterations(t *testing.T) {
	for _, n := range []string{"4095", "16385", "2000000000"} {
		start := time.Now()
		err := run(context.Background(), []string{"user", "scram", "set", "alice", "--password", "p", "--iterations", n,
			"--bootstrap-server", "127.0.0.1:1"}, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--iterations") {
			t.Errorf("--iterations %s: %v", n, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("--iterations %s took %v to refuse", n, d)
		}
	}
}
