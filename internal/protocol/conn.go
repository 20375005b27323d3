package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// readBufferSize is the read goroutine's bufio size: small requests
	// pipelined by a client are read with one syscall.
	readBufferSize = 16 << 10
	// flushThreshold: the write goroutine coalesces ready responses into
	// one write until this many bytes are buffered.
	flushThreshold = 256 << 10
	// keepWriteBuffer is the largest write buffer kept between writes; a
	// larger one (a big fetch response) is dropped once written.
	keepWriteBuffer = 1 << 20
	// smallFrame is the largest request frame read in one allocation and
	// charged to the memory budget without waiting for room; larger ones
	// grow from this size as their bytes arrive (readFrame).
	smallFrame = 64 << 10
	// frameGrowth is the factor by which a large frame's buffer grows as
	// its bytes arrive: a frame holds at most this many times what its
	// client has sent, and a 1 MB produce is copied twice on the way
	// (64 KiB, 256 KiB) instead of four times.
	frameGrowth = 4
	// smallFrameStart is the first allocation of a small frame whose
	// bytes have not all arrived yet.
	smallFrameStart = 4 << 10
	// idleWriteBuffer is the largest write buffer kept while the
	// connection has nothing to write.
	idleWriteBuffer = 64 << 10
)

// pending is a handled request waiting for the write goroutine.
type pending struct {
	key           int16
	version       int16
	correlationID int32
	resp          Response
	// frame is the encoded response frame, for a response that was
	// ready when handled (resp.Body set, no Later): the reader encodes
	// it at once, so that its size counts against the budget and the
	// connection's byte bound before the next request is read, and the
	// decoded response is dropped. Nil otherwise.
	frame []byte
	// parts are the parts of a RawResponse sent from elsewhere, their
	// offsets in frame.
	parts []RawPart
	// held is the request's share of the memory budget, released once
	// its response is written.
	held *held
	// resolved, for a Response with Mute, is closed by the writer once
	// the response's Later returned; the reader reads nothing more
	// until then.
	resolved chan struct{}
	// received and handled are when the request's frame was read and
	// when its handler returned, encoded when its response was encoded
	// (Config.Observer).
	received, handled, encoded time.Time
}

// unsentResponse is an encoded response not yet written, for
// Observer.ResponseSent.
type unsentResponse struct {
	key, version int16
	encoded      time.Time
}

// held is what one request holds of the server's memory budget: its frame
// and its encoded response, if that was ready when the request was handled
// (a RawResponse's parts are not in memory and not counted). The read
// goroutine sets it up and the write goroutine releases it. The queue
// between them orders those accesses.
type held struct {
	c        *conn
	frame    int64
	response int64
	// small: the frame was charged by chargeSmall.
	small bool
	// parked is the frame's bytes counted as parked (Budget.parked)
	// until its Later returns.
	parked int64
}

// conn is one client connection.
//
// The read goroutine (readLoop) is its only reader and the only sender on
// queue; it closes queue when it stops reading, after which the write
// goroutine (writeLoop) writes what is queued and closes the connection.
// shutdown, called by either goroutine or by Server.Close, closes the socket
// and cancels ctx at once, which stops both goroutines without writing
// anything more.
type conn struct {
	s    *Server
	nc   net.Conn
	info ConnInfo
	// lis is the security of the listener the connection came in on.
	lis Listener
	// sasl is the connection's SASL progress on a SASL listener. Read
	// goroutine only.
	sasl saslState
	// ip is the peer's address, for max.connections.per.ip.
	ip  string
	log *slog.Logger

	// ctx is passed to Handle; cancel is called by shutdown.
	ctx    context.Context
	cancel context.CancelFunc

	// queue carries handled requests, in arrival order, from the read
	// goroutine to the write goroutine. Its capacity, Config.MaxInFlight,
	// is the backpressure bound: the reader blocks on a full queue.
	queue chan pending
	// writerDone is closed when writeLoop returns.
	writerDone chan struct{}

	// charged is the bytes of the server's budget this connection holds:
	// the frames of its requests not yet answered (and of the one being
	// read), and their responses' reservations. Both goroutines update
	// it; whatever is left when both have stopped is released then.
	charged atomic.Int64
	// released is signalled (without blocking) by the writer each time it
	// releases bytes, for a reader paused on MaxQueuedBytesPerConnection.
	released chan struct{}
	// owed is the bytes of the responses encoded into the write buffer
	// but not yet written, released once they are; owedSmall is the part
	// of it that is small frames (Budget.chargeSmall). Write goroutine
	// only.
	owed, owedSmall int64
	// unsent are the encoded responses not yet written
	// (Observer.ResponseSent), in the order they are.
	unsent []unsentResponse
	// small is the bytes of small frames the connection holds (see
	// Budget.small).
	small atomic.Int64
	// parked is the bytes the connection counts in Budget.parked.
	parked atomic.Int64
	// overdrawn is the bytes the connection took beyond the budget's
	// limit as the overdraft reader (Budget.acquire) and has not given
	// back; frameOverdrawn is the part of it taken for the frame read
	// last. Guarded by the budget's mutex.
	overdrawn, frameOverdrawn int64

	closeOnce sync.Once
}

func newConn(s *Server, nc net.Conn, lis Listener) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	if lis.TLS != nil {
		nc = tls.Server(nc, lis.TLS)
	}
	c := &conn{
		s:   s,
		nc:  nc,
		lis: lis,
		info: ConnInfo{
			ID:        s.nextID.Add(1),
			Remote:    nc.RemoteAddr(),
			Local:     nc.LocalAddr(),
			Listener:  lis.Name,
			Principal: Anonymous,
		},
		ctx:        ctx,
		cancel:     cancel,
		queue:      make(chan pending, s.cfg.MaxInFlight),
		writerDone: make(chan struct{}),
		released:   make(chan struct{}, 1),
	}
	c.log = s.log.With("conn", c.info.ID, "remote", c.info.Remote)
	return c
}

// take charges n bytes, already taken from the server's budget, to the
// connection.
func (c *conn) take(n int64) { c.charged.Add(n) }

// give releases n of the connection's bytes to the server's budget.
func (c *conn) give(n int64) { c.giveSmall(n, 0) }

// giveSmall releases n of the connection's bytes to the server's budget,
// small of them small frames'.
func (c *conn) giveSmall(n, small int64) {
	if n <= 0 {
		return
	}
	c.charged.Add(-n)
	c.small.Add(-small)
	c.s.budget.releaseFrom(c, n, small)
	select {
	case c.released <- struct{}{}:
	default:
	}
}

// shutdown closes the socket and cancels the connection's context. Queued
// responses are dropped.
func (c *conn) shutdown() {
	c.closeOnce.Do(func() {
		c.cancel()
		c.nc.Close()
	})
}

// readLoop reads, decodes and handles requests one at a time, in arrival
// order.
//
// When the socket fails (the client closed it, an idle timeout, a reset) the
// connection is shut down at once: nobody is left to read the responses,
// and cancelling the context ends pending Later funcs. When the client sends
// something invalid, a handler panics, or a response asks for the
// connection to be closed, the reader just stops: the writer still writes
// the responses to the requests before, then closes the connection, as
// Kafka, which answers one request at a time, would have answered them.
func (c *conn) readLoop() {
	defer c.s.wg.Done()
	defer func() {
		// Ownership: the reader outlives the writer so that the
		// connection leaves the server's table only when both are gone.
		<-c.writerDone
		// Responses dropped unwritten, a partial frame: whatever the
		// connection still holds goes back to the budget.
		c.giveSmall(c.charged.Load(), c.small.Load())
		c.s.budget.park(-c.parked.Load())
		c.s.removeConn(c)
	}()
	// Closing the queue lets the writer finish what was handled before
	// the reader stopped, then close the connection.
	defer close(c.queue)

	if !c.handshakeTLS() {
		c.shutdown()
		return
	}
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	dec := decoder{versions: c.s.cfg.Versions}
	var sizeBuf [4]byte
	for {
		// Kafka mutes a connection until its response is sent; samsa
		// pipelines, but stops reading while the connection's unanswered
		// requests and their responses hold more than
		// MaxQueuedBytesPerConnection, so a client that does not read its
		// responses stops being read from.
		if !c.waitQueuedBytes() {
			return
		}
		c.setReadDeadline()
		if _, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			c.logReadError(err, true)
			c.shutdown()
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		// The limit is checked before allocating: a hostile size prefix
		// costs nothing.
		if size < 0 || size > c.s.cfg.MaxRequestBytes {
			c.log.Debug("protocol: closing connection", "err", fmt.Errorf("%w: %d bytes, max %d", ErrFrameSize, size, c.s.cfg.MaxRequestBytes))
			return
		}
		if c.saslPending() && size > c.lis.MaxSASLReceive {
			c.log.Info("protocol: closing connection", "err", fmt.Errorf("%w: %d-byte frame before SASL authentication, max %d (sasl.server.max.receive.size)",
				ErrFrameSize, size, c.lis.MaxSASLReceive))
			return
		}
		if c.sasl.raw {
			// A token of a v0 SASL exchange: no request header.
			c.setReadDeadline()
			frame, _, err := c.readFrame(br, int(size), false)
			h := &held{c: c, frame: int64(cap(frame)), small: size <= smallFrame}
			if err != nil {
				c.logReadError(err, false)
				c.shutdown()
				return
			}
			p, ok := c.saslRawToken(frame)
			if !ok {
				return
			}
			p.held = h
			if p.resp.Later != nil && !h.small {
				// A failed login's delayed answer must not keep the
				// overdraft from others (as for any Later below).
				c.s.budget.forgiveFrameOverdraft(c)
			}
			select {
			case c.queue <- p:
			case <-c.ctx.Done():
				return
			}
			if p.resp.Close {
				return
			}
			continue
		}
		if size < minRequestHeader {
			c.log.Debug("protocol: closing connection", "err", fmt.Errorf("%w: %d-byte frame is shorter than a request header", ErrMalformed, size))
			return
		}
		// The API key of a large frame is peeked before its body is
		// read: only Produce may exceed MaxNonProduceRequestBytes, and
		// only other requests may finish their frame beside parked
		// produce frames (see Budget.acquire).
		bulk := false
		if size > smallFrame {
			c.setReadDeadline()
			keyBytes, err := br.Peek(2)
			if err != nil {
				c.logReadError(err, false)
				c.shutdown()
				return
			}
			key := int16(binary.BigEndian.Uint16(keyBytes))
			bulk = key == produceKey && !c.saslPending()
			if size > c.s.cfg.MaxNonProduceRequestBytes && !bulk {
				c.log.Debug("protocol: closing connection", "err", fmt.Errorf("%w: %d-byte frame for API key %d, max %d for anything but Produce",
					ErrFrameSize, size, key, c.s.cfg.MaxNonProduceRequestBytes))
				return
			}
		}
		c.setReadDeadline()
		frame, pooled, err := c.readFrame(br, int(size), bulk)
		h := &held{c: c, frame: int64(cap(frame)), small: size <= smallFrame}
		if err != nil {
			c.logReadError(err, false)
			c.shutdown()
			return
		}
		var received time.Time
		if c.s.cfg.Observer != nil {
			received = time.Now()
		}
		req, err := dec.decode(frame)
		if err != nil {
			c.log.Debug("protocol: closing connection", "err", err)
			return
		}
		req.Conn = &c.info
		req.held = h

		var resp Response
		intercepted, ok := false, true
		if c.lis.SASL != nil {
			if resp, intercepted, ok = c.saslRequest(req); !ok {
				return
			}
		}
		if !intercepted {
			if resp, ok = c.handle(req); !ok {
				return
			}
		}
		if bulk {
			// The produce's records were copied to the log (Handler).
			putFrameBuffer(pooled)
		}
		p := pending{key: req.Key, version: req.Version, correlationID: req.CorrelationID, resp: resp, held: h, received: received}
		if !received.IsZero() {
			p.handled = time.Now()
		}
		if resp.Later != nil && bulk {
			// A produce waiting for its followers, whose fetches may
			// be large frames waiting for room (Budget.parked).
			h.parked = h.frame
			c.parked.Add(h.parked)
			c.s.budget.park(h.parked)
		} else if resp.Later != nil && !h.small {
			// A long poll, a SyncGroup: parked for as long as the
			// client likes. What it took beyond the budget must not
			// keep the next overdraft from others (Budget.acquire);
			// it is held like a small frame's bytes, within
			// MaxQueuedBytesPerConnection.
			c.s.budget.forgiveFrameOverdraft(c)
		}
		if resp.Later == nil && !resp.NoResponse {
			// Encoded now and counted: a response of any kind (a
			// Metadata response can be thousands of times its
			// request) holds budget and the connection's byte bound
			// until written, so a client that does not read its
			// responses stops being read from.
			enc, parts, ok := c.appendBody(nil, &p, resp.Body)
			if !ok {
				return
			}
			c.observe(&p, resp.Body, time.Time{})
			p.frame, p.parts, p.resp.Body = enc, parts, nil
			c.s.budget.Charge(int64(len(enc)))
			c.take(int64(len(enc)))
			h.response = int64(len(enc))
		}
		if resp.Mute && resp.Later != nil {
			p.resolved = make(chan struct{})
		}
		select {
		case c.queue <- p:
		case <-c.ctx.Done():
			return
		}
		if p.resolved != nil {
			// A long poll: nothing behind it is read (nor handled,
			// nor held in memory) until it is answered, as Kafka
			// mutes a connection until its response is sent.
			if !c.waitMuted(br, p.resolved) {
				return
			}
		}
		if resp.Close {
			// Requests after this one are not handled: their side
			// effects must not happen on a connection being closed
			// (Kafka closes after a failed acks=0 produce).
			return
		}
		if resp.Throttle > 0 {
			// Muted as for a long poll, so a client that closes the
			// connection meanwhile is noticed at once.
			elapsed := make(chan struct{})
			t := time.AfterFunc(resp.Throttle, func() { close(elapsed) })
			ok := c.waitMuted(br, elapsed)
			t.Stop()
			if !ok {
				return
			}
		}
	}
}

// waitMuted waits until resolved is closed, reading nothing, but noticing
// a client that closes the connection meanwhile (so that its long poll is
// cancelled and its bytes given back at once, not when the poll ends). It
// returns false if the connection is done.
func (c *conn) waitMuted(br *bufio.Reader, resolved <-chan struct{}) bool {
	// No deadline while muted: the long poll is not the client idling.
	c.nc.SetReadDeadline(time.Time{})
	peeked := make(chan error, 1)
	go func() {
		// Whatever the client sends meanwhile stays buffered for the
		// read loop; only a failed read is acted on. Pipelined bytes
		// are watched past until the buffer is full.
		for n := 1; ; n = br.Buffered() + 1 {
			if n > br.Size() {
				peeked <- nil
				return
			}
			if _, err := br.Peek(n); err != nil {
				peeked <- err
				return
			}
		}
	}()
	select {
	case err := <-peeked:
		if err != nil {
			c.logReadError(err, true)
			c.shutdown()
			return false
		}
		// The buffer is full of requests pipelined behind the long
		// poll: they wait their turn.
		select {
		case <-resolved:
		case <-c.ctx.Done():
			return false
		}
		return true
	case <-resolved:
	case <-c.ctx.Done():
	}
	// Stop the peek, and wait for it: the read loop reads br next.
	c.nc.SetReadDeadline(time.Now())
	err := <-peeked
	c.nc.SetReadDeadline(time.Time{}) // the read loop sets its own
	if c.ctx.Err() != nil {
		return false
	}
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
		c.logReadError(err, true)
		c.shutdown()
		return false
	}
	return true
}

// waitQueuedBytes waits while the connection holds
// MaxQueuedBytesPerConnection or more. It returns false if the connection
// closed meanwhile. Only bytes of requests still to be answered are
// counted, and the writer releases them as it writes, so the wait ends.
func (c *conn) waitQueuedBytes() bool {
	limit := c.s.cfg.MaxQueuedBytesPerConnection
	if limit <= 0 {
		return true
	}
	for c.charged.Load() >= limit {
		select {
		case <-c.released:
		case <-c.ctx.Done():
			return false
		}
	}
	return true
}

// readFrame reads a frame of size bytes (the size prefix already read). A
// frame of up to smallFrame bytes is read into one buffer if its bytes
// have arrived (else one that grows from 4 KiB as they do), charged to the
// budget without waiting: every request but bulk Produce is that small,
// and none of them must wait behind bulk data (a follower's fetch, which
// an acks=all produce holding the budget may be waiting for). A larger
// frame's buffer starts at smallFrame and grows fourfold (frameGrowth) as
// its bytes arrive, each step taken from the budget first, waiting for
// room: a client that claims 100 MB and sends them slowly holds only a few
// times what it has sent.
//
// A Produce frame larger than smallFrame (bulk) is read into buffers of a
// pool (framepool.go), whose size may exceed the frame's by up to a
// sixteenth: the budget is charged the buffer's whole capacity, cap(frame)
// (the bytes read stop at size). pooled is the buffer under the frame, for
// the caller to give back once the request is handled (the Handler
// contract). Any other frame gets a fresh buffer, which the decoded body
// aliases and a handler may keep. The frame's bytes stay charged to the
// connection until its response is written. On an error the frame is nil.
func (c *conn) readFrame(br *bufio.Reader, size int, bulk bool) (frame, pooled []byte, err error) {
	budget := c.s.budget
	if size <= smallFrame {
		// Allocated as the bytes arrive (all at once when they have):
		// a client that sends size prefixes and nothing more holds
		// nothing.
		for len(frame) < size {
			if len(frame) == cap(frame) {
				if _, err := br.Peek(1); err != nil {
					if err == io.EOF {
						err = io.ErrUnexpectedEOF
					}
					return frame, nil, err
				}
				n := min(size, max(2*cap(frame), len(frame)+br.Buffered(), smallFrameStart))
				grow := int64(n - cap(frame))
				budget.chargeSmall(grow)
				c.take(grow)
				c.small.Add(grow)
				frame = append(make([]byte, 0, n), frame...)
			}
			m, err := br.Read(frame[len(frame):cap(frame)])
			frame = frame[:len(frame)+m]
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return frame, nil, err
			}
		}
		return frame, nil, nil
	}
	budget.newFrame(c)
	defer budget.frameDone(c)
	// The caller set the read deadline to IdleTimeout from now. While
	// others wait for the budget, this frame must also fill each step of
	// its buffer within StallTimeout of being granted it (or of the last
	// check at which nobody waited), or the connection is closed and what
	// the frame holds given back: a client must send about as many bytes
	// per StallTimeout as its partial frame holds, so one that trickles
	// cannot keep them from others. The time spent waiting for the budget
	// is not counted: that is not the client's fault. Holding the
	// overdraft (Budget.acquire), it must send the rest of the frame at a
	// pace that finishes it within StallTimeout of getting the overdraft,
	// checked every tenth of that, so that a frame that trickles in does
	// not keep the overdraft from a normal one for long.
	var idleEnd time.Time
	if c.s.cfg.IdleTimeout > 0 {
		idleEnd = time.Now().Add(c.s.cfg.IdleTimeout)
	}
	stall := c.s.cfg.StallTimeout
	var check time.Time
	// The overdraft's pace: from paceStart, when paceBase bytes had been
	// read, the rest must come within stall; checked at paceCheck.
	var paceStart, paceCheck time.Time
	var paceBase int
	checkpoint := func(now time.Time) {
		if stall <= 0 {
			if !idleEnd.IsZero() {
				c.nc.SetReadDeadline(idleEnd) // moved by waits for the budget
			}
			return
		}
		check = now.Add(stall)
		if paceStart.IsZero() {
			if _, ok := budget.overdraftSince(c); ok {
				paceStart, paceBase = now, len(frame)
			}
		}
		d := check
		if !paceStart.IsZero() {
			if paceCheck.IsZero() || !now.Before(paceCheck) {
				paceCheck = now.Add(max(stall/10, time.Millisecond))
			}
			if paceCheck.Before(d) {
				d = paceCheck
			}
		}
		if !idleEnd.IsZero() && idleEnd.Before(d) {
			d = idleEnd
		}
		c.nc.SetReadDeadline(d)
	}
	for len(frame) < size {
		if len(frame) == cap(frame) {
			n := min(max(frameGrowth*cap(frame), smallFrame), size)
			if bulk {
				n = frameBufferSize(n)
			}
			grow := int64(n - cap(frame))
			waitStart := time.Now()
			if err := budget.acquire(c.ctx, grow, int64(cap(frame)), int64(size), c, bulk); err != nil {
				putFrameBuffer(pooled)
				return nil, nil, err
			}
			if !idleEnd.IsZero() {
				// Waiting for the budget is not the client idling.
				idleEnd = idleEnd.Add(time.Since(waitStart))
			}
			c.take(grow)
			var next []byte
			if bulk {
				next = getFrameBuffer(n)
			} else {
				next = make([]byte, 0, n)
			}
			next = next[:len(frame)]
			copyPreemptibly(next, frame)
			if bulk {
				putFrameBuffer(pooled)
				pooled = next
			}
			frame = next
			checkpoint(time.Now())
		}
		// A pooled buffer may be larger than the frame: never read
		// past the frame's end (the next request's bytes).
		m, err := br.Read(frame[len(frame):min(cap(frame), size)])
		frame = frame[:len(frame)+m]
		now := time.Now()
		if err != nil {
			var ne net.Error
			if stall <= 0 || !errors.As(err, &ne) || !ne.Timeout() || !idleEnd.IsZero() && !now.Before(idleEnd) {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				putFrameBuffer(pooled)
				return nil, nil, err
			}
			// The stall check's deadline: see below.
		}
		if stall <= 0 || len(frame) == cap(frame) {
			continue
		}
		paced := !paceStart.IsZero() && !now.Before(paceCheck)
		if !paced && now.Before(check) {
			if err != nil {
				checkpoint(now)
			}
			continue
		}
		if !budget.contended() {
			if paced {
				// Nobody waits: the pace starts again from here.
				paceStart, paceBase = now, len(frame)
			}
			checkpoint(now)
			continue
		}
		if paced {
			left := size - paceBase
			due := int64(float64(left) * float64(now.Sub(paceStart)) / float64(stall))
			if int64(len(frame)-paceBase+smallFrame) < due {
				putFrameBuffer(pooled)
				return nil, nil, fmt.Errorf("%w: %d of %d bytes sent, %d in the %v since it got the overdraft, too slow to finish within %v while others wait for the memory budget",
					errStalled, len(frame), size, len(frame)-paceBase, now.Sub(paceStart).Round(time.Millisecond), stall)
			}
		}
		if !now.Before(check) {
			putFrameBuffer(pooled)
			return nil, nil, fmt.Errorf("%w: %d of %d bytes sent, the %d-byte buffer not filled within %v while others wait for the memory budget",
				errStalled, len(frame), size, cap(frame), stall)
		}
		checkpoint(now)
	}
	return frame, pooled, nil
}

// copyPreemptibly is copy(dst, src) in pieces of at most copyPiece bytes,
// yielding the processor between pieces. One copy is one memmove, which
// the runtime cannot preempt: a frame's buffer grown from 16 MiB copies
// 16 MiB into fresh memory, page fault after page fault, while the garbage
// collector, which must stop the goroutine to scan its stack, spins on it
// sending signals that slow the copy further, holding the other P. With
// two cores, a broker taking 2,000-partition produce requests stalled so
// for 1.2–1.4 s (no goroutine ran, timers included) and its etcd session
// lapsed. Async preemption seldom lands between two memmoves; Gosched is
// a sure stop.
func copyPreemptibly(dst, src []byte) {
	src = src[:min(len(src), len(dst))]
	for len(src) > 0 {
		n := copy(dst, src[:min(len(src), copyPiece)])
		dst, src = dst[n:], src[n:]
		if len(src) > 0 {
			runtime.Gosched()
		}
	}
}

// copyPiece bounds one memmove of copyPreemptibly.
const copyPiece = 256 << 10

// errStalled closes a connection whose large frame stopped progressing
// while others waited for the memory budget (Config.StallTimeout).
var errStalled = errors.New("protocol: frame stalled")

func (c *conn) setReadDeadline() {
	if c.s.cfg.IdleTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	} else {
		// No idle limit: clear what readFrame's stall checks set.
		c.nc.SetReadDeadline(time.Time{})
	}
}

// logReadError logs why reading stopped; betweenRequests tells whether the
// read was of a size prefix.
func (c *conn) logReadError(err error, betweenRequests bool) {
	var ne net.Error
	switch {
	case c.ctx.Err() != nil:
		// Closed by us; nothing to report.
	case errors.Is(err, io.EOF) && betweenRequests:
		// The client closed between requests: the normal end.
	case errors.Is(err, io.EOF):
		c.log.Debug("protocol: client closed mid-request", "err", io.ErrUnexpectedEOF)
	case errors.As(err, &ne) && ne.Timeout():
		c.log.Debug("protocol: closing idle connection", "idle_timeout", c.s.cfg.IdleTimeout, "mid_request", !betweenRequests)
	default:
		c.log.Debug("protocol: read failed", "err", err, "mid_request", !betweenRequests)
	}
}

// handle calls the handler, turning a panic into a closed connection.
func (c *conn) handle(req *Request) (resp Response, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("protocol: handler panic; closing connection",
				"key", req.Key, "version", req.Version, "correlation_id", req.CorrelationID,
				"panic", r, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	return c.s.handler.Handle(c.ctx, req), true
}

// writeLoop writes responses in request order. Ready responses are
// coalesced into one write; a Later response is waited for only after
// everything before it has been written.
func (c *conn) writeLoop() {
	defer c.s.wg.Done()
	defer close(c.writerDone)
	defer c.shutdown()

	var buf []byte
	for {
		var p pending
		var ok bool
		if len(buf) > 0 || c.owed > 0 || len(c.unsent) > 0 {
			select {
			case p, ok = <-c.queue:
			default:
				if buf, ok = c.flush(buf); !ok {
					return
				}
				continue
			}
		} else {
			// Nothing to write: an idle connection keeps no large
			// buffer, which the budget does not count.
			buf = idleBuffer(buf)
			select {
			case p, ok = <-c.queue:
			case <-c.ctx.Done():
				return
			}
		}
		if !ok {
			// The reader has stopped; everything it queued is
			// encoded.
			c.flush(buf)
			return
		}
		if p.resp.Later != nil && (len(buf) > 0 || c.owed > 0 || len(c.unsent) > 0) {
			if buf, ok = c.flush(buf); !ok {
				return
			}
		}
		switch {
		case p.parts != nil:
			base := len(buf)
			buf = append(buf, p.frame...)
			c.owe(&p)
			if buf, ok = c.sendParts(buf, p.parts, base); !ok {
				return
			}
		case len(p.frame) >= flushThreshold:
			// Written as it is rather than copied into buf.
			if len(buf) > 0 {
				if buf, ok = c.flush(buf); !ok {
					return
				}
			}
			c.owe(&p)
			if _, ok = c.flush(p.frame); !ok {
				return
			}
		case p.frame != nil:
			buf = append(buf, p.frame...)
			c.owe(&p)
		default:
			var parts []RawPart
			if buf, parts, ok = c.encode(buf, &p); !ok {
				c.flush(buf)
				return
			}
			c.owe(&p)
			if parts != nil {
				if buf, ok = c.sendParts(buf, parts, 0); !ok {
					return
				}
			}
		}
		// The response is encoded in buf: drop the decoded one (a fetch
		// response's records, the Later closure holding the request)
		// before a write that may block, so that the response's bytes
		// are in memory once, not twice.
		closing := p.resp.Close
		p = pending{}
		if closing {
			c.flush(buf)
			return
		}
		if len(buf) >= flushThreshold {
			if buf, ok = c.flush(buf); !ok {
				return
			}
		}
	}
}

// owe adds what p holds to the bytes released once buf is written.
func (c *conn) owe(p *pending) {
	if p.held != nil {
		c.owed += p.held.frame + p.held.response
		if p.held.small {
			c.owedSmall += p.held.frame
		}
	}
	if !p.encoded.IsZero() && !p.resp.NoResponse {
		c.unsent = append(c.unsent, unsentResponse{key: p.key, version: p.version, encoded: p.encoded})
	}
}

// sent tells the observer of the responses owed so far: they are written.
func (c *conn) sent() {
	if len(c.unsent) == 0 {
		return
	}
	now := time.Now()
	for _, u := range c.unsent {
		c.s.cfg.Observer.ResponseSent(u.key, u.version, now.Sub(u.encoded))
	}
	c.unsent = c.unsent[:0]
}

// idleBuffer returns buf, or nil if it is larger than idleWriteBuffer. A
// call rather than an if: the compiler turned the if into a conditional
// move after the wait that follows, which kept the large buffer alive
// during the wait.
//
//go:noinline
func idleBuffer(buf []byte) []byte {
	if cap(buf) > idleWriteBuffer {
		return nil
	}
	return buf
}

// encode resolves p's response (calling Later if set) and appends its frame
// to buf, but for the parts of a RawResponse, returned with their offsets
// in out. It returns false if the connection must close; buf then still
// holds the earlier responses.
func (c *conn) encode(buf []byte, p *pending) (out []byte, parts []RawPart, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("protocol: panic producing response; closing connection",
				"key", p.key, "version", p.version, "correlation_id", p.correlationID,
				"panic", r, "stack", string(debug.Stack()))
			out, parts, ok = buf, nil, false
		}
	}()
	body := p.resp.Body
	if p.resp.Later != nil {
		// Later must return once ctx is done, but the writer does not
		// start one after that.
		if c.ctx.Err() != nil {
			return buf, nil, false
		}
		body = p.resp.Later()
		if p.resolved != nil {
			close(p.resolved)
		}
		if h := p.held; h != nil && h.parked > 0 {
			c.parked.Add(-h.parked)
			c.s.budget.park(-h.parked)
			h.parked = 0
		}
		if c.ctx.Err() != nil {
			// Whatever a Later returns once the connection is
			// closing cannot be written.
			return buf, nil, false
		}
	}
	var ready time.Time
	if !p.handled.IsZero() && p.resp.Later != nil {
		ready = time.Now()
	}
	if p.resp.NoResponse {
		c.observe(p, nil, ready)
		return buf, nil, true
	}
	out, parts, ok = c.appendBody(buf, p, body)
	if ok {
		c.observe(p, body, ready)
	}
	return out, parts, ok
}

// observe tells the server's Observer of p, answered with body (encoded
// now); ready is when its Later returned (zero: it had none).
func (c *conn) observe(p *pending, body kmsg.Response, ready time.Time) {
	o := c.s.cfg.Observer
	if o == nil || p.received.IsZero() {
		return
	}
	now := time.Now()
	p.encoded = now
	d := RequestDone{Key: p.key, Version: p.version, Listener: c.info.Listener,
		Local: p.handled.Sub(p.received), Total: now.Sub(p.received), Body: body}
	if !ready.IsZero() {
		d.Remote = ready.Sub(p.handled)
	}
	if _, raw := body.(*RawResponse); raw {
		d.Body = nil
	}
	o.RequestDone(d)
}

// appendBody appends the frame of p's response body to buf, and returns
// the parts of a RawResponse with their offsets in out. It returns false if
// the connection must close; buf then still holds what it held.
func (c *conn) appendBody(buf []byte, p *pending, body kmsg.Response) (out []byte, parts []RawPart, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("protocol: panic encoding response; closing connection",
				"key", p.key, "version", p.version, "correlation_id", p.correlationID,
				"panic", r, "stack", string(debug.Stack()))
			out, parts, ok = buf, nil, false
		}
	}()
	if body == nil {
		c.log.Error("protocol: handler returned no response; closing connection",
			"key", p.key, "version", p.version, "correlation_id", p.correlationID)
		return buf, nil, false
	}
	if body.Key() != p.key {
		c.log.Error("protocol: handler returned a response for another key; closing connection",
			"key", p.key, "response_key", body.Key(), "correlation_id", p.correlationID)
		return buf, nil, false
	}
	if raw, isRaw := body.(*RawResponse); isRaw {
		if raw.GetVersion() != p.version {
			c.log.Error("protocol: handler encoded a response at another version; closing connection",
				"key", p.key, "version", p.version, "response_version", raw.GetVersion(), "correlation_id", p.correlationID)
			return buf, nil, false
		}
		out, parts, err := appendRawResponse(buf, p.correlationID, raw)
		if err != nil {
			c.log.Error("protocol: cannot encode response; closing connection", "key", p.key, "err", err)
			return buf, nil, false
		}
		return out, parts, true
	}
	if body.GetVersion() != p.version {
		body.SetVersion(p.version)
	}
	out, err := appendResponse(buf, p.correlationID, body)
	if err != nil {
		c.log.Error("protocol: cannot encode response; closing connection", "key", p.key, "err", err)
		return buf, nil, false
	}
	return out, nil, true
}

// sendParts writes buf, a response's frame with its parts (their offsets
// shifted by base) sent in their places, and returns what of buf follows
// the last part, for the next flush.
func (c *conn) sendParts(buf []byte, parts []RawPart, base int) ([]byte, bool) {
	prev := 0
	for _, part := range parts {
		at := base + part.At
		if at > prev {
			if !c.write(buf[prev:at]) {
				return buf, false
			}
			prev = at
		}
		// What the responses written so far held is released now, not
		// after the parts (which may wait on a slow client); the few
		// bytes of this response still in buf go with them.
		c.giveSmall(c.owed, c.owedSmall)
		c.owed, c.owedSmall = 0, 0
		if c.s.cfg.WriteTimeout > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
		}
		n, err := part.Data.WriteTo(c.nc)
		if err == nil && n != part.Data.Len() {
			err = fmt.Errorf("protocol: wrote %d of a %d-byte part", n, part.Data.Len())
		}
		if err != nil {
			if c.ctx.Err() == nil {
				c.log.Info("protocol: cannot send a response's records; closing connection", "err", err)
			}
			return buf, false
		}
	}
	// The rest waits in buf for the responses that follow.
	rest := copy(buf, buf[prev:])
	return buf[:rest], true
}

// flush writes buf and returns it emptied for reuse (or nil if it grew too
// big to keep). It returns false when the write failed.
//
// Once the bytes are written, the budget the responses held is released:
// until then the encoded responses are in buf.
func (c *conn) flush(buf []byte) ([]byte, bool) {
	if len(buf) == 0 {
		c.giveSmall(c.owed, c.owedSmall)
		c.owed, c.owedSmall = 0, 0
		c.sent()
		return buf, true
	}
	ok := c.write(buf)
	if cap(buf) > keepWriteBuffer {
		buf = nil
	}
	if !ok {
		return buf, false
	}
	c.giveSmall(c.owed, c.owedSmall)
	c.owed, c.owedSmall = 0, 0
	c.sent()
	return buf[:0], true
}

// write writes b to the socket, within the write timeout. It returns false
// when the write failed.
func (c *conn) write(b []byte) bool {
	if c.s.cfg.WriteTimeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	}
	if _, err := c.nc.Write(b); err != nil {
		if c.ctx.Err() == nil {
			c.log.Debug("protocol: write failed; closing connection", "err", err)
		}
		return false
	}
	return true
}
