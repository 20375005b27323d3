package broker

import (
	"context"
	"testing"
	"time"
)

// Start returns only once the view that clients are answered from shows
// the broker's own registration (issue 15): before, a new broker's first
// Metadata could leave it out and call its own partitions leaderless.
func TestStartWaitsForOwnRegistrationInView(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.DataDir = t.TempDir()
	cfg.MetadataClientURL = "http://127.0.0.1:0"
	cfg.MetadataPeerURL = "http://127.0.0.1:0"
	cfg.Logger = quietLogger()
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		b, err := Start(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		v := b.view()
		_, registered := v.Brokers[cfg.NodeID]
		if err := b.Close(); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		if !registered {
			t.Fatalf("start %d: the view (revision %d) does not show the broker's own registration", i, v.Revision)
		}
		cfg.Listeners = []string{"PLAINTEXT://" + b.Addrs()[0]}
	}
}
