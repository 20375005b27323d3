package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestLogFailureLeavesNoCleanMarker: a broker whose log failed (its
// fsyncs fail) must not write the clean-shutdown marker when it closes,
// although a failed log closes without an error (it skips the flush): the
// next start, another process or the next incarnation of Run, must come
// back recovering, out of ISRs and leadership until it caught up.
func TestLogFailureLeavesNoCleanMarker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := quietLogger()
	e := startTestEtcd(t)
	faults := &testutil.SyncFailFS{}
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.DataDir = t.TempDir()
	cfg.MetadataEndpoints = e.Endpoints()
	cfg.Logger = quiet
	cfg.LogFS = faults
	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	runDone := make(chan error, 1)
	go func() { runDone <- Run(runCtx, cfg) }()

	obs, err := coord.Connect(ctx, e.Endpoints(), cfg.ClusterName, coord.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if bs, err := obs.Brokers(ctx); err == nil && len(bs) == 1 {
			addr = bs[0].Host + ":" + strconv.Itoa(int(bs[0].Port))
		}
	}
	if addr == "" {
		t.Fatal("broker did not register")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	one := "1"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"flush.messages": &one}, "lf"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		pctx, pc := context.WithTimeout(ctx, 5*time.Second)
		err := cl.ProduceSync(pctx, &kgo.Record{Topic: "lf", Value: []byte("ok")}).FirstErr()
		pc()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("produce: %v", err)
		}
	}
	faults.FailSyncsUnder(filepath.Join(cfg.DataDir, "logs", "lf-0"))
	pctx, pc := context.WithTimeout(ctx, 5*time.Second)
	perr := cl.ProduceSync(pctx, &kgo.Record{Topic: "lf", Value: []byte("fails")}).FirstErr()
	pc()
	t.Logf("produce after fsyncs fail: %v", perr)
	select {
	case err := <-runDone:
		t.Logf("Run returned: %v", err)
		if !errors.Is(err, coord.ErrSessionLost) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the log failure")
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, cleanShutdownFileName)); err == nil {
		t.Errorf("clean-shutdown marker written after a log failure: the next start is clean, not recovering")
	}
}
