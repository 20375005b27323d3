package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/samsa-io/samsa/internal/log"
	"github.com/samsa-io/samsa/internal/replica"
)

// replicaConnAgainst returns a replicaConn whose peer answers each request
// with answer(correlation id), read by the test's own goroutine.
func replicaConnAgainst(t *testing.T, answer func(corr int32) []byte) *replicaConn {
	t.Helper()
	srv, cli := net.Pipe()
	t.Cleanup(func() { srv.Close(); cli.Close() })
	go func() {
		for {
			var size [4]byte
			if _, err := io.ReadFull(srv, size[:]); err != nil {
				return
			}
			req := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(srv, req); err != nil {
				return
			}
			out := answer(int32(binary.BigEndian.Uint32(req[4:8])))
			if out == nil {
				continue // no answer: the client waits
			}
			if _, err := srv.Write(out); err != nil {
				return
			}
		}
	}()
	c := &replicaConn{nc: cli, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("t"))}
	c.br = newReplicaReader(cli)
	return c
}

// frame returns a response frame of body after a correlation id and an
// empty tagged-fields section (a flexible response header).
func frame(corr int32, header, body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	out = append(out, header...)
	return append(out, body...)
}

// A replica fetch response is checked before it is used: a size prefix
// over the bound fails before anything of that size is allocated, a
// response to another request and a malformed header fail, and a
// well-formed answer is decoded.
func TestReplicaConnChecksResponses(t *testing.T) {
	fetch := func() *kmsg.FetchRequest {
		r := kmsg.NewPtrFetchRequest()
		r.Version = 12
		return r
	}
	good := kmsg.NewPtrFetchResponse()
	good.Version = 12
	good.SessionID = 77
	goodBody := good.AppendTo(nil)

	for _, tc := range []struct {
		name   string
		answer func(corr int32) []byte
		want   string
	}{
		{"huge size", func(int32) []byte { return binary.BigEndian.AppendUint32(nil, 1<<30) }, "at most"},
		{"negative size", func(int32) []byte { return binary.BigEndian.AppendUint32(nil, 0xffffff00) }, "at most"},
		{"other correlation id", func(corr int32) []byte { return frame(corr+1, []byte{0}, goodBody) }, "correlation id"},
		{"tagged field past the end", func(corr int32) []byte { return frame(corr, []byte{1, 5, 100}, nil) }, "malformed header"},
		{"truncated body", func(corr int32) []byte { return frame(corr, []byte{0}, goodBody[:3]) }, "malformed response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := replicaConnAgainst(t, tc.answer)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := c.request(ctx, fetch(), 1<<20)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one about %q", err, tc.want)
			}
		})
	}

	c := replicaConnAgainst(t, func(corr int32) []byte { return frame(corr, []byte{0}, goodBody) })
	for range 3 {
		resp, err := c.request(context.Background(), fetch(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.(*kmsg.FetchResponse).SessionID; got != 77 {
			t.Fatalf("decoded session id %d, want 77", got)
		}
	}
}

// A fetch whose leader does not answer returns once its context is
// cancelled (a fetcher being stopped), with the context's error.
func TestReplicaConnRequestCancelled(t *testing.T) {
	c := replicaConnAgainst(t, func(int32) []byte { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		r := kmsg.NewPtrFetchRequest()
		r.Version = 12
		_, err := c.request(ctx, r, 1<<20)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled fetch did not return")
	}
}

// A follower dials again a tenth of its SASL session's life before the
// end, at least a second before it (half the life if that is shorter),
// never for a session without an end, and without overflowing for a
// very long one.
func TestReauthTime(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		life int64 // ms
		want time.Duration
	}{
		{0, -1},
		{-1000, -1},
		{1500, 750 * time.Millisecond},
		{3000, 2 * time.Second},
		{60_000, 54 * time.Second},
		{18446744073710, 365 * 24 * time.Hour * 9 / 10}, // would wrap to 448 µs as a Duration
		{1 << 62, 365 * 24 * time.Hour * 9 / 10},
	} {
		got := reauthTime(start, tc.life)
		if tc.want < 0 {
			if !got.IsZero() {
				t.Errorf("life %v: dial again at %v, want never", tc.life, got)
			}
			continue
		}
		if d := got.Sub(start); d != tc.want {
			t.Errorf("life %v: dial again after %v, want %v", tc.life, d, tc.want)
		}
	}
}

// A replica fetch accepts a response as large as its MaxBytes, slack for
// the headers, and one batch (KIP-74) of the largest max.message.bytes
// among its partitions' topics, or of socket.request.max.bytes if that is
// larger: a topic allowing 200 MiB batches, or one whose limit was lowered
// after larger batches were written, must not have the response that
// carries one refused, which would stall every partition fetched from
// that leader.
func TestReplicaFetchBoundFollowsMaxMessageBytes(t *testing.T) {
	cfg := klog.DefaultConfig()
	cfg.FS = klog.NewMemFS(1)
	cfg.Logger = slog.New(slog.DiscardHandler)
	parts := map[topicPartition]*localPartition{}
	for i, maxMessageBytes := range []int32{0, 200 << 20, 5 << 20} {
		l, err := klog.Open("/t-"+strconv.Itoa(i), cfg)
		if err != nil {
			t.Fatal(err)
		}
		lp := &localPartition{Partition: replica.New("t"+strconv.Itoa(i), 0, 1, l, 0)}
		if maxMessageBytes > 0 {
			lp.settings.Store(&topicSettings{maxMessageBytes: maxMessageBytes})
		}
		if err := lp.BecomeFollower(1, 2); err != nil {
			t.Fatal(err)
		}
		defer lp.Close(false)
		parts[topicPartition{"t" + strconv.Itoa(i), 0}] = lp
	}
	f := &fetcher{b: &Broker{cfg: DefaultConfig(), logger: slog.New(slog.DiscardHandler)}}
	req, sent, maxBatch := f.request(parts)
	if len(sent) != 3 || req.MaxBytes != replicaFetchMaxBytes {
		t.Fatalf("%d partitions sent, MaxBytes %d", len(sent), req.MaxBytes)
	}
	if maxBatch != 200<<20 {
		t.Fatalf("largest batch %d, want the 200 MiB of max.message.bytes", maxBatch)
	}
	delete(parts, topicPartition{"t1", 0})
	// Without it, socket.request.max.bytes: batches written before a
	// topic's limit was lowered are no larger than the Produce that
	// carried them.
	if _, _, maxBatch = f.request(parts); maxBatch != int64(f.b.cfg.SocketRequestMaxBytes) {
		t.Fatalf("largest batch %d without the 200 MiB topic, want socket.request.max.bytes (%d)", maxBatch, f.b.cfg.SocketRequestMaxBytes)
	}
}
