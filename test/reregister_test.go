package test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/coord"
)

// TestRunRegistersAgainAfterSessionLoss: a broker under broker.Run (as the
// samsa binary runs it) whose session is ended from outside (fenced, as a
// peer does when its heartbeats stop, or as when its lease expires) does
// not exit: it closes that incarnation, keeps its embedded etcd member and
// data directory, registers again as a new incarnation and serves what it
// stored before. Twice, so the second incarnation is as good as the first.
func TestRunRegistersAgainAfterSessionLoss(t *testing.T) {
	cfg := broker.DefaultConfig()
	kafkaPort := procFreePort(t)
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:" + strconv.Itoa(kafkaPort)}
	cfg.DataDir = t.TempDir()
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(procFreePort(t))
	cfg.MetadataClientURL = etcdURL
	cfg.MetadataPeerURL = "http://127.0.0.1:" + strconv.Itoa(procFreePort(t))
	cfg.Logger = testLogger()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(kafkaPort))

	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- broker.Run(runCtx, cfg) }()
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		stopRun()
		select {
		case <-runDone:
		case <-time.After(60 * time.Second):
			t.Errorf("Run did not return")
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The embedded member serves once Run has started it.
	var etcdc *coord.Client
	WaitFor(t, 60*time.Second, func() error {
		c, err := coord.Connect(ctx, []string{etcdURL}, cfg.ClusterName, coord.WithLogger(testLogger()))
		if err != nil {
			return err
		}
		etcdc = c
		return nil
	})
	t.Cleanup(func() { etcdc.Close() })
	incarnation := func(after int64) int64 {
		t.Helper()
		var rev int64
		WaitFor(t, 60*time.Second, func() error {
			select {
			case err := <-runDone:
				stopped = true
				t.Fatalf("Run returned %v; want it to register again", err)
			default:
			}
			vbs, err := etcdc.VersionedBrokers(ctx)
			if err != nil {
				return err
			}
			for _, vb := range vbs {
				if vb.ID == cfg.NodeID && vb.CreateRevision > after {
					rev = vb.CreateRevision
					return nil
				}
			}
			return fmt.Errorf("broker %d has no registration newer than revision %d: %v", cfg.NodeID, after, vbs)
		})
		return rev
	}
	rev := incarnation(0)

	const topic = "reregister"
	e2eCreateTopic(ctx, t, addr, topic, 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(v string) {
		t.Helper()
		pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
		defer pcancel()
		if err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
	produce("before")

	for i := range 2 {
		fenced, err := etcdc.FenceBroker(ctx, cfg.NodeID, rev)
		if err != nil || !fenced {
			t.Fatalf("FenceBroker(%d, %d) = %v, %v; want true", cfg.NodeID, rev, fenced, err)
		}
		rev = incarnation(rev)
		t.Logf("fenced incarnation %d; registered again at revision %d", i+1, rev)
		produce(fmt.Sprintf("after-%d", i+1))
	}

	// Everything written to every incarnation is there.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if want := []string{"before", "after-1", "after-2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}

	// Stopped, Run returns cleanly.
	stopRun()
	stopped = true
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("Run returned %v after its context ended; want nil", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Run did not return")
	}
}
