package test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPackageLayering enforces the import rules of STYLE.md's package table:
// imports point downward only, only coord talks to etcd, the log and
// metadata model use the standard library alone, and the wire server never
// sees partitions.
func TestPackageLayering(t *testing.T) {
	const mod = "github.com/samsa-io/samsa/"
	// allowed lists, per package, the module's own packages it may import;
	// stdlibOnly packages may import nothing outside the standard library.
	allowed := map[string][]string{
		"internal/meta":       {},
		"internal/log":        {},
		"internal/records":    {"internal/log"},
		"internal/replica":    {"internal/log", "internal/meta"},
		"internal/coord":      {"internal/meta"},
		"internal/protocol":   {},
		"internal/controller": {"internal/coord", "internal/meta"},
		"internal/group":      {"internal/records"},
		"internal/txn":        {"internal/records"},
		"internal/auth":       {"internal/meta"},
		"internal/broker":     {"internal/auth", "internal/controller", "internal/coord", "internal/group", "internal/log", "internal/meta", "internal/protocol", "internal/records", "internal/replica", "internal/txn"},
		// The client commands read Kafka's client security settings
		// (PEM stores, JAAS) with the broker's own stateless parsers.
		"cmd/samsa": {"internal/auth", "internal/broker", "internal/metrics", "web"},
		// The metrics read the broker's read-only Status, as the
		// console does; the broker never imports them.
		"internal/metrics": {"internal/broker", "internal/protocol"},
		// The console renders the broker's read-only views only.
		"web": {"internal/broker"},
	}
	stdlibOnly := map[string]bool{"internal/meta": true, "internal/log": true}
	// Only coord may use etcd; Kafka message types stay out of the storage,
	// replication and metadata core (protocol, broker and the client
	// commands use them).
	external := map[string][]string{
		"go.etcd.io/etcd/":                  {"internal/coord"},
		"github.com/twmb/franz-go/pkg/kmsg": {"internal/protocol", "internal/group", "internal/txn", "internal/broker", "internal/metrics", "cmd/samsa"},
		"github.com/prometheus/":            {"internal/metrics", "cmd/samsa"},
	}

	out, err := exec.Command("go", "list", "-json", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
			Standard   bool
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, mod)
		rules, ok := allowed[name]
		if !ok {
			continue
		}
		seen++
		for _, imp := range p.Imports {
			if own, isOwn := strings.CutPrefix(imp, mod); isOwn {
				if !slices.Contains(rules, own) {
					t.Errorf("%s imports %s, which STYLE.md's layering forbids", name, own)
				}
				continue
			}
			if stdlibOnly[name] && strings.Contains(strings.Split(imp, "/")[0], ".") {
				t.Errorf("%s imports %s; it may use the standard library only", name, imp)
			}
			for prefix, users := range external {
				if strings.HasPrefix(imp, prefix) && !slices.Contains(users, name) {
					t.Errorf("%s imports %s; only %v may", name, imp, users)
				}
			}
		}
	}
	if seen != len(allowed) {
		t.Fatalf("checked %d packages, want %d: a package moved or go list failed", seen, len(allowed))
	}
}
