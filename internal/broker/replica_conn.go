package broker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// replicaConn is a follower's connection to its leader's inter-broker
// listener, over which its fetcher sends one replica Fetch after another.
// The fetcher's own goroutine writes each request and reads its response:
// a client library would hand each request to its connection's writer
// goroutine and each response back from its reader goroutine, two more
// wake-ups of goroutines on other threads per round trip of the
// replication pipeline, which on a two-core virtual machine cost more than
// the fetch itself (docs/performance.md, "Replica fetches").
type replicaConn struct {
	nc  net.Conn
	br  *bufio.Reader
	f   *kmsg.RequestFormatter
	buf []byte
	// corr is the correlation id of the last request.
	corr int32
	// reauthAt is when to dial again before the SASL session ends
	// (connections.max.reauth.ms, KIP-368); zero: never.
	reauthAt time.Time
}

// replicaDialer makes replicaConns to other brokers' inter-broker
// listener, with its TLS and SASL.
type replicaDialer struct {
	sec      interBrokerSecurity
	clientID string
	timeout  time.Duration
}

// dial connects to addr and authenticates, within the dialer's timeout.
func (d replicaDialer) dial(ctx context.Context, addr string) (*replicaConn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if d.sec.tls != nil {
		cfg := d.sec.tls.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := &replicaConn{nc: nc, br: newReplicaReader(nc),
		f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(d.clientID))}
	if d.sec.sasl != nil {
		if err := c.authenticate(ctx, d.sec.sasl, addr); err != nil {
			nc.Close()
			return nil, fmt.Errorf("SASL %s with %s: %w", d.sec.sasl.Name(), addr, err)
		}
	}
	return c, nil
}

// newReplicaReader buffers a replicaConn's reads.
func newReplicaReader(nc net.Conn) *bufio.Reader { return bufio.NewReaderSize(nc, 64<<10) }

// authenticate runs a SASL exchange (SaslHandshake v1, then
// SaslAuthenticate until the mechanism is done).
func (c *replicaConn) authenticate(ctx context.Context, m sasl.Mechanism, addr string) error {
	host, _, _ := net.SplitHostPort(addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = m.Name()
	r, err := c.request(ctx, hs, saslMaxResponse)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(r.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return err
	}
	start := time.Now()
	session, out, err := m.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	// As franz-go does: what the mechanism still has to say once it is
	// done is sent too (neither PLAIN nor SCRAM has anything).
	for done := false; ; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 1
		req.SASLAuthBytes = out
		r, err := c.request(ctx, req, saslMaxResponse)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
			}
			return err
		}
		if !done {
			if done, out, err = session.Challenge(resp.SASLAuthBytes); err != nil {
				return err
			}
		} else {
			out = nil
		}
		if done && len(out) == 0 {
			c.reauthAt = reauthTime(start, resp.SessionLifetimeMillis)
			return nil
		}
	}
}

// reauthTime is when to dial again for a SASL session of lifeMillis that
// began at start (zero: it does not end): a tenth of its life before it
// ends, at least a second (half its life if that is under two seconds),
// so that a fetch sent then reaches the leader before the session's end
// even on a loaded machine. A life over a year counts as a year (and is
// clamped before it is converted, which could overflow).
func reauthTime(start time.Time, lifeMillis int64) time.Time {
	if lifeMillis <= 0 {
		return time.Time{}
	}
	const year = 365 * 24 * time.Hour
	life := time.Duration(min(lifeMillis, year.Milliseconds())) * time.Millisecond
	margin := min(max(life/10, time.Second), life/2)
	return start.Add(life - margin)
}

// expired reports whether the connection's SASL session is about to end.
func (c *replicaConn) expired(now time.Time) bool {
	return !c.reauthAt.IsZero() && !now.Before(c.reauthAt)
}

// saslMaxResponse bounds the size of a SASL response.
const saslMaxResponse = 1 << 20

// request writes req and reads its response, within ctx's deadline; ctx
// being cancelled interrupts both. The response's size prefix is checked
// against maxResponse before its buffer is allocated. On an error the
// connection is unusable: the caller closes it.
func (c *replicaConn) request(ctx context.Context, req kmsg.Request, maxResponse int64) (kmsg.Response, error) {
	deadline, _ := ctx.Deadline() // zero: none
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// A cancelled ctx stops the I/O by a deadline in the past. If that
	// has begun, it is waited for: landing after the next request's
	// deadline, it would fail that one.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.nc.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()

	c.corr++
	c.buf = c.f.AppendRequest(c.buf[:0], req, c.corr)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, c.fail(ctx, err)
	}
	if cap(c.buf) > 64<<10 {
		c.buf = nil // a request with many partitions: not kept
	}

	var sizeBuf [4]byte
	if _, err := io.ReadFull(c.br, sizeBuf[:]); err != nil {
		return nil, c.fail(ctx, err)
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 4 || int64(size) > maxResponse {
		return nil, fmt.Errorf("response of %d bytes to %s v%d (at most %d accepted)", size, kmsg.NameForKey(req.Key()), req.GetVersion(), maxResponse)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c.br, body); err != nil {
		return nil, c.fail(ctx, err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return nil, fmt.Errorf("response with correlation id %d to request %d", corr, c.corr)
	}
	rest := body[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		// Response header v1: tagged fields, none of which we use.
		var ok bool
		if rest, ok = skipTaggedFields(rest); !ok {
			return nil, fmt.Errorf("malformed header of the response to %s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
	}
	if err := resp.ReadFrom(rest); err != nil {
		return nil, fmt.Errorf("malformed response to %s v%d: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// fail returns the error of a failed read or write: ctx's if it was
// cancelled or ran out meanwhile (the deadline that stopped the I/O was
// set for it).
func (c *replicaConn) fail(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

func (c *replicaConn) close() error { return c.nc.Close() }

// skipTaggedFields returns b past a tagged-fields section (a count, then
// each field's tag, size and bytes), or false if b does not hold one.
func skipTaggedFields(b []byte) ([]byte, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, false
	}
	b = b[w:]
	for ; n > 0; n-- {
		if _, w = binary.Uvarint(b); w <= 0 {
			return nil, false
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || size > uint64(len(b)-w) {
			return nil, false
		}
		b = b[w+int(size):]
	}
	return b, true
}
