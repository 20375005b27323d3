package main

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// utime (field 14) 250 and stime (field 15) 150 ticks: 4 s. The
	// command name holds spaces and a ')'.
	stat := "1234 (a b) c) S 1 2 3 4 5 6 7 8 9 10 250 150 7 7 20 0 1 0 100 0 0\n"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 4*time.Second {
		t.Errorf("parseStatCPU = %v, want 4s", got)
	}
	for _, bad := range []string{"", "1234 (x S 1 2", "1 (x) S 1 2 3", "1 (x) S 1 2 3 4 5 6 7 8 9 10 u 1"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q): no error", bad)
		}
	}
}

// TestProcessCPUGrows reads this process's CPU time, burns CPU until it
// has grown, and fails if it never does.
func TestProcessCPUGrows(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i ^ x
		}
		now, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			return
		}
	}
	t.Fatalf("CPU time stayed at %v while spinning (%d)", before, x)
}
