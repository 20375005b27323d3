package main

import (
	"strings"
	"testing"
	"time"
)

func TestGroupHelp(t *testing.T) {
	out, _, err := runCLI(t, "", "group", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"list", "describe", "reset-offsets", "delete", "delete-offsets", "--timeout", "--bootstrap-server"} {
		if !strings.Contains(out, want) {
			t.Errorf("group help does not mention %q:\n%s", want, out)
		}
	}
}

// TestGroupUsageErrors checks flag validation that must fail before any
// broker is contacted.
func TestGroupUsageErrors(t *testing.T) {
	blackhole := startBlackhole(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"list takes no args", []string{"group", "list", "x"}, "unknown command"},
		{"describe members and state", []string{"group", "describe", "g", "--members", "--state"}, "none of the others can be"},
		{"reset without group", []string{"group", "reset-offsets", "--topic", "t", "--to-earliest"}, "--group"},
		{"reset without scenario", []string{"group", "reset-offsets", "--group", "g", "--topic", "t"}, "say where to reset to"},
		{"reset two scenarios", []string{"group", "reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--to-latest"}, "none of the others can be"},
		{"reset without partitions", []string{"group", "reset-offsets", "--group", "g", "--to-earliest"}, "--all-topics"},
		{"reset topic and all", []string{"group", "reset-offsets", "--group", "g", "--topic", "t", "--all-topics", "--to-earliest"}, "none of the others can be"},
		{"reset bad partition", []string{"group", "reset-offsets", "--group", "g", "--topic", "t:a", "--to-earliest"}, "invalid --topic"},
		{"reset bad datetime", []string{"group", "reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", "2026-01-02"}, "invalid --to-datetime"},
		{"reset negative offset", []string{"group", "reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "-1"}, "want an offset >= 0"},
		{"reset bad offset", []string{"group", "reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "x"}, "invalid argument"},
		{"delete needs names", []string{"group", "delete"}, "requires at least 1 arg"},
		{"delete-offsets without group", []string{"group", "delete-offsets", "--topic", "t"}, "--group"},
		{"delete-offsets without topic", []string{"group", "delete-offsets", "--group", "g"}, "--topic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			args := append([]string{"-b", blackhole}, tt.args...)
			_, _, err := runCLI(t, "", args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v: a usage error must not wait for a broker", d)
			}
		})
	}
}

// TestGroupDeadBrokerIsBounded checks that every group command gives up
// soon after its --timeout when the broker never answers.
func TestGroupDeadBrokerIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for timeouts")
	}
	blackhole := startBlackhole(t)
	for _, args := range [][]string{
		{"group", "list"},
		{"group", "describe", "g"},
		{"group", "describe"},
		{"group", "reset-offsets", "--group", "g", "--topic", "t", "--to-earliest"},
		{"group", "delete", "g"},
		{"group", "delete-offsets", "--group", "g", "--topic", "t"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			out, _, err := runCLI(t, "", append([]string{"-b", blackhole, "--timeout", "1s"}, args...)...)
			if err == nil {
				t.Fatalf("no error against a dead broker; stdout %q", out)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("gave up after %v, want at most 4s (err: %v)", d, err)
			}
		})
	}
}
