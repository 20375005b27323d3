// Package testutil holds what tests of several packages share: fault
// injectors (a TCP proxy that can cut or slow its connections, an etcd out
// of reach; a log file system whose fsyncs fail on demand, a failing disk)
// and a certificate authority that issues TLS certificates at run time
// (certs.go). Only tests import it.
package testutil

import (
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	klog "github.com/samsa-io/samsa/internal/log"
)

// Proxy forwards TCP connections to a target and can cut them, so that a
// client finds the target unreachable while others still reach it.
type Proxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}

	// delay is added to every byte on its way to the target (SetDelay).
	delay atomic.Int64
	// quit is closed by close: delays end.
	quit chan struct{}

	wg sync.WaitGroup // accept loop and pipes
}

// NewProxy listens on a free port of 127.0.0.1 and forwards to target
// (host:port, or a URL of http://host:port). It stops at the test's end.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, target: strings.TrimPrefix(target, "http://"), conns: map[net.Conn]struct{}{}, quit: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Endpoints is the proxy as etcd client endpoints.
func (p *Proxy) Endpoints() []string { return []string{"http://" + p.Addr()} }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.conns[up] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipeDelayed(up, c)
		go p.pipe(c, up)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// pipeDelayed is pipe with the proxy's delay added to each chunk: each is
// written delay after it was read, in order (a latency, not a lower
// bandwidth: chunks read meanwhile are not held up further).
func (p *Proxy) pipeDelayed(dst, src net.Conn) {
	type chunk struct {
		b   []byte
		due time.Time
	}
	chunks := make(chan chunk, 1024)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	defer p.wg.Done()
	for c := range chunks {
		if d := time.Until(c.due); d > 0 {
			// The injected latency itself, cut short by close.
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.quit:
				t.Stop()
			}
		}
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	for range chunks {
	}
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// SetDelay adds d to the time every byte from a client takes to reach the
// target (0: none), for connections open or to come.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetDown cuts every connection and refuses new ones (down) or lets them
// through again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *Proxy) close() {
	close(p.quit)
	p.l.Close()
	p.SetDown(true)
	p.wg.Wait()
}

// SyncFailFS is the OS file system, except that once FailSyncsUnder names
// a directory, every fsync of a file in it, and of it, fails with EIO.
type SyncFailFS struct {
	klog.OSFS
	dir    atomic.Pointer[string]
	failed atomic.Int64
}

// FailSyncsUnder makes every later fsync under dir fail.
func (f *SyncFailFS) FailSyncsUnder(dir string) {
	dir = filepath.Clean(dir)
	f.dir.Store(&dir)
}

// Failed counts the fsyncs that failed.
func (f *SyncFailFS) Failed() int64 { return f.failed.Load() }

func (f *SyncFailFS) hits(name string) bool {
	dir := f.dir.Load()
	if dir == nil {
		return false
	}
	name = filepath.Clean(name)
	return name == *dir || strings.HasPrefix(name, *dir+string(filepath.Separator))
}

// OpenFile opens name, with fsyncs that fail once it is under the
// directory FailSyncsUnder names.
func (f *SyncFailFS) OpenFile(name string, flag int, perm fs.FileMode) (klog.File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &syncFailFile{File: file, name: name, fs: f}, nil
}

// SyncDir fsyncs dir, or fails if it is under the failing directory.
func (f *SyncFailFS) SyncDir(dir string) error {
	if f.hits(dir) {
		f.failed.Add(1)
		return &fs.PathError{Op: "fsync", Path: dir, Err: syscall.EIO}
	}
	return f.OSFS.SyncDir(dir)
}

type syncFailFile struct {
	klog.File
	name string
	fs   *SyncFailFS
}

func (f *syncFailFile) Sync() error {
	if f.fs.hits(f.name) {
		f.fs.failed.Add(1)
		return &fs.PathError{Op: "fdatasync", Path: f.name, Err: syscall.EIO}
	}
	return f.File.Sync()
}
