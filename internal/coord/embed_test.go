package coord

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A member restarted on its data dir (on new ports) has all its data: the
// cluster id stays, topics and states stay.
func TestEmbeddedRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	e := startEtcd(t, dir)
	eps := e.Endpoints()
	if len(eps) != 1 || strings.HasSuffix(eps[0], ":0") || !strings.HasPrefix(eps[0], "http://127.0.0.1:") {
		t.Fatalf("endpoints %v, want one resolved http://127.0.0.1 URL", eps)
	}
	c := connect(t, eps, "")
	id, err := c.ClusterID(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	topic, _ := createTopic(t, c, "durable", 2)
	first, err := c.AllocateProducerIDs(testCtx(t), 100)
	if err != nil || first != 0 {
		t.Fatalf("first producer id block at %d, %v", first, err)
	}
	c.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Done():
	default:
		t.Fatal("Done open after Close")
	}

	e2 := startEtcd(t, dir)
	c2 := connect(t, e2.Endpoints(), "")
	id2, err := c2.ClusterID(testCtx(t))
	if err != nil || id2 != id {
		t.Fatalf("cluster id after restart %q, %v; want %q", id2, err, id)
	}
	vt, err := c2.Topic(testCtx(t), "durable")
	if err != nil || !reflect.DeepEqual(vt.Topic, topic) {
		t.Fatalf("topic after restart %+v, %v; want %+v", vt.Topic, err, topic)
	}
	if ps := statesOf(t, c2, "durable"); len(ps) != 2 {
		t.Fatalf("%d states after restart, want 2", len(ps))
	}
	if next, err := c2.AllocateProducerIDs(testCtx(t), 1); err != nil || next != 100 {
		t.Fatalf("producer id block after restart at %d, %v; want 100", next, err)
	}
}

func TestStartEmbeddedValidates(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  EmbeddedConfig
	}{
		{"no dir", EmbeddedConfig{}},
		{"bad client URL", EmbeddedConfig{Dir: t.TempDir(), ClientURL: "http://127.0.0.1"}},
		{"random peer port in a multi-member cluster", EmbeddedConfig{
			Dir: t.TempDir(), Name: "a", PeerURL: "127.0.0.1:0", InitialCluster: "a=http://127.0.0.1:1,b=http://127.0.0.1:2",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := StartEmbedded(testCtx(t), tt.cfg)
			if err == nil {
				e.Close()
			}
			mustIs(t, err, ErrInvalid)
		})
	}
}

// A member that cannot become ready (its peers never come) gives up when
// ctx ends.
func TestStartEmbeddedHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	peerA, peerB := "http://127.0.0.1:"+freePort(t), "http://127.0.0.1:"+freePort(t)
	start := time.Now()
	e, err := StartEmbedded(ctx, EmbeddedConfig{
		Dir: t.TempDir(), Name: "a", ClientURL: "127.0.0.1:0", PeerURL: peerA,
		InitialCluster: "a=" + peerA + ",b=" + peerB,
		Logger:         quietLogger(),
	})
	if err == nil {
		e.Close()
		t.Fatal("a member of a two-member cluster without its peer became ready")
	}
	mustIs(t, err, context.DeadlineExceeded)
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("took %v with a 500ms deadline", elapsed)
	}
}

// TestEmbeddedPeerListenURL: a member known to its peers by a DNS name
// (a Kubernetes pod's) cannot bind that name, as etcd binds IP addresses
// only; with PeerListenURL it binds that address and advertises the name.
func TestEmbeddedPeerListenURL(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skipf("no host name: %v", err)
	}
	if addrs, err := net.LookupHost(host); err != nil || len(addrs) == 0 {
		t.Skipf("the host name %q does not resolve: %v", host, err)
	}
	port := freePort(t)
	cfg := EmbeddedConfig{
		Dir:       t.TempDir(),
		Name:      "dns-member",
		ClientURL: "http://127.0.0.1:0",
		PeerURL:   "http://" + host + ":" + port,
		Logger:    slog.New(slog.DiscardHandler),
	}
	if e, err := StartEmbedded(testCtx(t), cfg); err == nil {
		e.Close()
		t.Fatal("a member bound a DNS name: the scenario needs etcd to refuse it")
	}
	cfg.Dir = t.TempDir()
	cfg.PeerListenURL = "http://127.0.0.1:" + port
	e, err := StartEmbedded(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("with a peer listen URL: %v", err)
	}
	defer e.Close()
	c := connect(t, e.Endpoints(), "")
	if _, err := c.ClusterID(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	cfg.PeerListenURL = "https://127.0.0.1:" + port
	if _, err := StartEmbedded(testCtx(t), cfg); !errors.Is(err, ErrInvalid) {
		t.Errorf("a listen URL of another scheme: %v, want ErrInvalid", err)
	}
}
