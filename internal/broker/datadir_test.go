package broker

import (
	"os"
	"path/filepath"
	"testing"
)

// The clean-shutdown marker: taken (removed) at start, written at the end
// of a clean shutdown; a directory without it that has held a broker
// before is unclean, a fresh one is clean.
func TestCleanShutdownMarker(t *testing.T) {
	take := func(dir string) bool {
		t.Helper()
		clean, err := takeCleanShutdownMarker(dir, filepath.Join(dir, "logs"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, cleanShutdownFileName)); !os.IsNotExist(err) {
			t.Fatalf("marker still there after taking it: %v", err)
		}
		return clean
	}

	// Fresh, with or without an (empty) log directory: clean.
	dir := t.TempDir()
	if !take(dir) {
		t.Fatal("a fresh data directory counts as unclean")
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !take(dir) {
		t.Fatal("a data directory with an empty log directory counts as unclean")
	}

	// A broker ran (it recorded its session) and died without the marker.
	if err := recordLease(dir, 42); err != nil {
		t.Fatal(err)
	}
	if take(dir) {
		t.Fatal("no marker after a broker ran, yet clean")
	}
	// Clean shutdown, then start: clean once, unclean at the start after
	// (the marker is gone, as after a crash of the broker that took it).
	if err := writeCleanShutdownMarker(dir); err != nil {
		t.Fatal(err)
	}
	if !take(dir) {
		t.Fatal("marker present, yet unclean")
	}
	if take(dir) {
		t.Fatal("the marker was taken, yet the next start is clean")
	}

	// Partitions but no session record (lost, or from an older version)
	// and no marker: unclean.
	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(other, "logs", "t-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if take(other) {
		t.Fatal("a data directory holding partitions without a marker counts as clean")
	}

	// A marker that cannot be removed fails the start rather than be
	// left for a later crash to find.
	if os.Geteuid() != 0 { // root ignores directory permissions
		ro := t.TempDir()
		if err := writeCleanShutdownMarker(ro); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(ro, 0o755)
		if _, err := takeCleanShutdownMarker(ro, filepath.Join(ro, "logs")); err == nil {
			t.Fatal("an unremovable marker was accepted")
		}
	}
}
