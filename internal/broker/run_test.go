package broker

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestRunRegistersAgainAfterEtcdUnreachable: a broker cut off from etcd
// loses its session; closing that incarnation cannot revoke the lease
// (etcd is unreachable, so Close reports an error), and Run must still
// register again once etcd is back instead of returning.
func TestRunRegistersAgainAfterEtcdUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := quietLogger()
	if testing.Verbose() {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	e := startTestEtcd(t)
	u := e.Endpoints()[0]
	if i := len("http://"); len(u) > i && u[:i] == "http://" {
		u = u[i:]
	}
	px := testutil.NewProxy(t, u)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:" + strconv.Itoa(port)}
	cfg.DataDir = t.TempDir()
	cfg.MetadataEndpoints = []string{"http://" + px.Addr()}
	cfg.Logger = quiet

	obs, err := coord.Connect(ctx, e.Endpoints(), cfg.ClusterName, coord.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()

	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- Run(runCtx, cfg) }()
	defer func() {
		stopRun()
		select {
		case <-runDone:
		case <-time.After(60 * time.Second):
			t.Errorf("Run did not return")
		}
	}()
	registered := func(after int64) int64 {
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			select {
			case err := <-runDone:
				runDone <- err
				return -1
			default:
			}
			vbs, err := obs.VersionedBrokers(ctx)
			if err != nil {
				continue
			}
			for _, vb := range vbs {
				if vb.ID == cfg.NodeID && vb.CreateRevision > after {
					return vb.CreateRevision
				}
			}
		}
		return 0
	}
	rev := registered(0)
	if rev <= 0 {
		t.Fatalf("first incarnation did not register")
	}
	// etcd unreachable for 8 s: the session ends (lostAfter 1.5 s).
	px.SetDown(true)
	time.Sleep(8 * time.Second) // the fault: etcd out of reach for 8 s
	px.SetDown(false)
	select {
	case err := <-runDone:
		runDone <- err
		t.Fatalf("Run returned after losing its session to an unreachable etcd, instead of registering again: %v", err)
	default:
	}
	if r := registered(rev); r <= 0 {
		t.Fatalf("no new incarnation registered after etcd came back (r=%d)", r)
	}
}
