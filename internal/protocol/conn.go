package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"time"
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
)

// pending is a handled request waiting for the write goroutine.
type pending struct {
	key           int16
	version       int16
	correlationID int32
	resp          Response
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
	log  *slog.Logger

	// ctx is passed to Handle; cancel is called by shutdown.
	ctx    context.Context
	cancel context.CancelFunc

	// queue carries handled requests, in arrival order, from the read
	// goroutine to the write goroutine. Its capacity, Config.MaxInFlight,
	// is the backpressure bound: the reader blocks on a full queue.
	queue chan pending
	// writerDone is closed when writeLoop returns.
	writerDone chan struct{}

	closeOnce sync.Once
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{
		s:  s,
		nc: nc,
		info: ConnInfo{
			ID:     s.nextID.Add(1),
			Remote: nc.RemoteAddr(),
			Local:  nc.LocalAddr(),
		},
		ctx:        ctx,
		cancel:     cancel,
		queue:      make(chan pending, s.cfg.MaxInFlight),
		writerDone: make(chan struct{}),
	}
	c.log = s.log.With("conn", c.info.ID, "remote", c.info.Remote)
	return c
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
		c.s.removeConn(c)
	}()
	// Closing the queue lets the writer finish what was handled before
	// the reader stopped, then close the connection.
	defer close(c.queue)

	br := bufio.NewReaderSize(c.nc, readBufferSize)
	dec := decoder{versions: c.s.cfg.Versions}
	var sizeBuf [4]byte
	for {
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
		if size < minRequestHeader {
			c.log.Debug("protocol: closing connection", "err", fmt.Errorf("%w: %d-byte frame is shorter than a request header", ErrMalformed, size))
			return
		}
		if size > c.s.cfg.MaxNonProduceRequestBytes {
			c.setReadDeadline()
			keyBytes, err := br.Peek(2)
			if err != nil {
				c.logReadError(err, false)
				c.shutdown()
				return
			}
			if key := int16(binary.BigEndian.Uint16(keyBytes)); key != produceKey {
				c.log.Debug("protocol: closing connection", "err", fmt.Errorf("%w: %d-byte frame for API key %d, max %d for anything but Produce",
					ErrFrameSize, size, key, c.s.cfg.MaxNonProduceRequestBytes))
				return
			}
		}
		// A fresh buffer per request: the decoded body aliases it, and a
		// handler may keep it (a Later closure, records being
		// replicated) after this loop has moved on.
		frame := make([]byte, size)
		c.setReadDeadline()
		if _, err := io.ReadFull(br, frame); err != nil {
			c.logReadError(err, false)
			c.shutdown()
			return
		}
		req, err := dec.decode(frame)
		if err != nil {
			c.log.Debug("protocol: closing connection", "err", err)
			return
		}
		req.Conn = &c.info

		resp, ok := c.handle(req)
		if !ok {
			return
		}
		p := pending{key: req.Key, version: req.Version, correlationID: req.CorrelationID, resp: resp}
		select {
		case c.queue <- p:
		case <-c.ctx.Done():
			return
		}
		if resp.Close {
			// Requests after this one are not handled: their side
			// effects must not happen on a connection being closed
			// (Kafka closes after a failed acks=0 produce).
			return
		}
	}
}

func (c *conn) setReadDeadline() {
	if c.s.cfg.IdleTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
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
		if len(buf) > 0 {
			select {
			case p, ok = <-c.queue:
			default:
				if buf, ok = c.flush(buf); !ok {
					return
				}
				continue
			}
		} else {
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
		if p.resp.Later != nil && len(buf) > 0 {
			if buf, ok = c.flush(buf); !ok {
				return
			}
		}
		if buf, ok = c.encode(buf, &p); !ok {
			c.flush(buf)
			return
		}
		if p.resp.Close {
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

// encode resolves p's response (calling Later if set) and appends its frame
// to buf. It returns false if the connection must close; buf then still
// holds the earlier responses.
func (c *conn) encode(buf []byte, p *pending) (out []byte, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("protocol: panic producing response; closing connection",
				"key", p.key, "version", p.version, "correlation_id", p.correlationID,
				"panic", r, "stack", string(debug.Stack()))
			out, ok = buf, false
		}
	}()
	body := p.resp.Body
	if p.resp.Later != nil {
		// Later must return once ctx is done, but the writer does not
		// start one after that.
		if c.ctx.Err() != nil {
			return buf, false
		}
		body = p.resp.Later()
		if c.ctx.Err() != nil {
			// Whatever a Later returns once the connection is
			// closing cannot be written.
			return buf, false
		}
	}
	if p.resp.NoResponse {
		return buf, true
	}
	if body == nil {
		c.log.Error("protocol: handler returned no response; closing connection",
			"key", p.key, "version", p.version, "correlation_id", p.correlationID)
		return buf, false
	}
	if body.Key() != p.key {
		c.log.Error("protocol: handler returned a response for another key; closing connection",
			"key", p.key, "response_key", body.Key(), "correlation_id", p.correlationID)
		return buf, false
	}
	if body.GetVersion() != p.version {
		body.SetVersion(p.version)
	}
	out, err := appendResponse(buf, p.correlationID, body)
	if err != nil {
		c.log.Error("protocol: cannot encode response; closing connection", "key", p.key, "err", err)
		return out, false
	}
	return out, true
}

// flush writes buf and returns it emptied for reuse (or nil if it grew too
// big to keep). It returns false when the write failed.
func (c *conn) flush(buf []byte) ([]byte, bool) {
	if len(buf) == 0 {
		return buf, true
	}
	if c.s.cfg.WriteTimeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	}
	_, err := c.nc.Write(buf)
	if cap(buf) > keepWriteBuffer {
		buf = nil
	}
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Debug("protocol: write failed; closing connection", "err", err)
		}
		return buf, false
	}
	return buf[:0], true
}
