package test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/broker"
)

// A second broker process on a data directory in use fails at once with a
// clear error instead of sharing (and corrupting) the logs.
func TestDataDirLocked(t *testing.T) {
	b := StartBroker(t)
	cfg := b.Config
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.MetadataClientURL, cfg.MetadataPeerURL = "http://127.0.0.1:0", "http://127.0.0.1:0"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second, err := broker.Start(ctx, cfg)
	if err == nil {
		second.Close()
		t.Fatal("a second broker started on a locked data directory")
	}
	if !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("got %v, want the data directory lock error", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("failed by timing out rather than at once: %v", err)
	}
}
