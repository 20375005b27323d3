package protocol

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Review finding: a failed v0 (raw) SASL token larger than 64 KiB keeps
// what it took beyond the budget counted as overdrawn for the whole
// connection.failed.authentication.delay.ms, because the raw path in
// readLoop (conn.go, the `if c.sasl.raw` block) queues the failure's Later
// without calling Budget.forgiveFrameOverdraft, as the normal path does for
// every non-small frame whose response has a Later (a failed v1
// SaslAuthenticate included). While overdrawn > 0 no waiting reader turns
// patient (pickOverdraftLocked), so a large frame of any other client waits
// the full delay instead of overdraftPatience (1 s): an unauthenticated
// client with no credentials stalls other clients' large requests for as
// long as the failed-login delay, connection after connection.
//
// The v1 twin of this test (same token in a SaslAuthenticate) is answered
// after about a second.
func TestReview1RawTokenOverdraftNotForgiven(t *testing.T) {
	for _, v0 := range []bool{false, true} {
		name := "v1"
		if v0 {
			name = "v0"
		}
		t.Run(name, func(t *testing.T) {
			h := &reviewHandler{}
			lis := reviewListener()
			lis.FailedAuthDelay = 6 * time.Second
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			s := NewServer(Config{Logger: testLogger(t), QueuedMaxBytes: 128 << 10, Versions: func(k int16) (int16, int16, bool) {
				v, ok := reviewVersions[k]
				return v[0], v[1], ok
			}}, h)
			served := make(chan error, 1)
			go func() { served <- s.ServeListener(ln, lis) }()
			t.Cleanup(func() { s.Close(); <-served })
			addr := ln.Addr().String()

			// A: a 300 KiB token that fails.
			a := dialRaw(t, addr)
			bad := bytes.Repeat([]byte("x"), 300<<10)
			if v0 {
				a.roundTrip(handshake(0), 1)
				a.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(bad))), bad...))
			} else {
				a.roundTrip(handshake(1), 1)
				a.send(&kmsg.SASLAuthenticateRequest{Version: 1, SASLAuthBytes: bad}, 2)
			}
			waitFor(t, 5*time.Second, func() error {
				if s.Budget().Used() < 256<<10 {
					return errTest("A's frame not read yet")
				}
				return nil
			})

			// B: a 100 KiB ApiVersions (allowed before authentication).
			b := dialRaw(t, addr)
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			req.ClientSoftwareName = "b"
			req.ClientSoftwareVersion = string(bytes.Repeat([]byte("1"), 100<<10))
			start := time.Now()
			b.send(req, 9)
			b.recvFrame()
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("another client's 100 KiB request waited %v behind a failed %s login (FailedAuthDelay %v); want about overdraftPatience (%v)",
					d.Round(100*time.Millisecond), name, lis.FailedAuthDelay, overdraftPatience)
			}
		})
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
