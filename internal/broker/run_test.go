package broker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/testutil"
)

// runHarness is a broker under Run (as the samsa binary runs it) on an
// external etcd member, reached through endpoints.
type runHarness struct {
	t       *testing.T
	ctx     context.Context
	cfg     Config
	obs     *coord.Client // straight to etcd
	runDone chan error
}

// startRun starts Run, with the settings opts change, and waits until its
// first incarnation serves Kafka requests (registered is not started yet).
// Run is stopped at the test's end.
func startRun(t *testing.T, e *coord.Embedded, endpoints []string, opts ...func(*Config)) *runHarness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h := &runHarness{t: t, ctx: ctx, cfg: DefaultConfig(), runDone: make(chan error, 1)}
	h.cfg.Listeners = []string{"PLAINTEXT://" + addr}
	h.cfg.DataDir = t.TempDir()
	h.cfg.MetadataEndpoints = endpoints
	h.cfg.Logger = quietLogger()
	for _, o := range opts {
		o(&h.cfg)
	}
	if h.obs, err = coord.Connect(ctx, e.Endpoints(), h.cfg.ClusterName, coord.WithLogger(quietLogger())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.obs.Close() })
	runCtx, stopRun := context.WithCancel(context.Background())
	go func() { h.runDone <- Run(runCtx, h.cfg) }()
	t.Cleanup(func() {
		stopRun()
		select {
		case <-h.runDone:
		case <-time.After(60 * time.Second):
			t.Errorf("Run did not return")
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	h.waitFor("the first incarnation to serve", func() error {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		return cl.Ping(pctx)
	})
	return h
}

// waitFor polls cond until it holds, failing the test if Run returns or a
// minute passes.
func (h *runHarness) waitFor(what string, cond func() error) {
	h.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		h.checkRunning()
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// checkRunning fails the test if Run has returned.
func (h *runHarness) checkRunning() {
	h.t.Helper()
	select {
	case err := <-h.runDone:
		h.runDone <- err
		h.t.Fatalf("Run returned (the process would exit) instead of registering again: %v", err)
	default:
	}
}

// registration returns the create revision of the broker's registration,
// 0 if none.
func (h *runHarness) registration() int64 {
	h.t.Helper()
	vbs, err := h.obs.VersionedBrokers(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, vb := range vbs {
		if vb.ID == h.cfg.NodeID {
			return vb.CreateRevision
		}
	}
	return 0
}

// waitRegisteredAfter waits for a registration newer than rev.
func (h *runHarness) waitRegisteredAfter(rev int64) {
	h.t.Helper()
	h.waitFor("a new incarnation's registration", func() error {
		if r := h.registration(); r <= rev {
			return fmt.Errorf("registration at revision %d, want one after %d", r, rev)
		}
		return nil
	})
}

// TestRunRegistersAgainAfterEtcdUnreachable: a broker cut off from etcd
// loses its session; closing that incarnation cannot revoke the lease
// (etcd is unreachable, so Close reports an error), and Run must still
// register again once etcd is back instead of returning.
func TestRunRegistersAgainAfterEtcdUnreachable(t *testing.T) {
	e := startTestEtcd(t)
	px := testutil.NewProxy(t, e.Endpoints()[0])
	h := startRun(t, e, px.Endpoints())
	rev := h.registration()
	px.SetDown(true)
	time.Sleep(8 * time.Second) // the fault: etcd out of reach for 8 s (the session ends after 1.5 s)
	px.SetDown(false)
	h.checkRunning()
	h.waitRegisteredAfter(rev)
}

// TestRunRegistersAgainAfterNoSpace: while etcd takes no writes (its
// NOSPACE alarm) every session ends, since no heartbeat lands, and starting
// again fails; Run must keep trying, not exit (with embedded etcd an exit
// takes the member the operator needs to free space), and register again
// once the alarm is disarmed.
func TestRunRegistersAgainAfterNoSpace(t *testing.T) {
	e := startTestEtcd(t)
	h := startRun(t, e, e.Endpoints())
	rev := h.registration()
	raw, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ml, err := raw.MemberList(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	member := ml.Members[0].ID
	if _, err := pb.NewMaintenanceClient(raw.ActiveConnection()).Alarm(h.ctx, &pb.AlarmRequest{
		Action: pb.AlarmRequest_ACTIVATE, MemberID: member, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatalf("activate NOSPACE: %v", err)
	}
	h.waitFor("the session to end", func() error {
		if r := h.registration(); r == rev {
			return fmt.Errorf("still registered at revision %d", r)
		}
		return nil
	})
	time.Sleep(5 * time.Second) // the fault goes on: several failed starts
	h.checkRunning()
	if _, err := raw.AlarmDisarm(h.ctx, &clientv3.AlarmMember{MemberID: member, Alarm: pb.AlarmType_NOSPACE}); err != nil {
		t.Fatalf("disarm NOSPACE: %v", err)
	}
	h.waitRegisteredAfter(rev)
}
