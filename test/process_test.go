package test

// Helpers that build the real samsa binary and run `samsa server` as a child
// process, so that tests can kill it with SIGKILL (a crash the in-process
// harness cannot simulate) or stop it with SIGTERM and check its exit code.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

const (
	// procBuildTimeout bounds `go build` of the binary. A warm build cache
	// makes it take seconds; a cold one (first run on a machine) minutes.
	procBuildTimeout = 10 * time.Minute
	// procStartTimeout bounds a child's start until its Kafka port answers
	// ApiVersions (embedded etcd start and log recovery included).
	procStartTimeout = 60 * time.Second
	// procStopTimeout bounds a clean shutdown after SIGTERM.
	procStopTimeout = 30 * time.Second
	// procStartAttempts is how often a start is retried with fresh ports
	// when another process grabbed one between our probe and the child's
	// bind.
	procStartAttempts = 5
)

// procBinary is the samsa binary built once per package run.
var procBinary struct {
	once sync.Once
	dir  string // removed by TestMain
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if procBinary.dir != "" {
		os.RemoveAll(procBinary.dir)
	}
	os.Exit(code)
}

// procSamsaBinary builds ./cmd/samsa (CGO_ENABLED=0, like the release binary)
// once per test binary run and returns its path. The binary goes to a
// directory of this run's own, which TestMain removes at the end, so
// concurrent runs (from other checkouts, say) never replace or delete the
// binary another run's children are started from.
func procSamsaBinary(t testing.TB) string {
	t.Helper()
	procBinary.once.Do(func() {
		root, err := procModuleRoot()
		if err != nil {
			procBinary.err = err
			return
		}
		dir, err := os.MkdirTemp("", "samsa-e2e-bin-*")
		if err != nil {
			procBinary.err = err
			return
		}
		procBinary.dir = dir
		path := filepath.Join(dir, "samsa")
		ctx, cancel := context.WithTimeout(context.Background(), procBuildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/samsa")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			procBinary.err = fmt.Errorf("go build ./cmd/samsa: %v\n%s", err, out)
			return
		}
		procBinary.path = path
	})
	if procBinary.err != nil {
		t.Fatalf("build samsa binary: %v", procBinary.err)
	}
	return procBinary.path
}

// procModuleRoot returns the directory holding go.mod.
func procModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// procFreePort returns a port on 127.0.0.1 that was free a moment ago. Another
// process may take it before the child binds it; startProc retries then.
func procFreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// procPorts are the three ports a child server binds.
type procPorts struct{ kafka, etcdClient, etcdPeer, metrics int }

func newProcPorts(t testing.TB) procPorts {
	return procPorts{procFreePort(t), procFreePort(t), procFreePort(t), procFreePort(t)}
}

// Proc is a `samsa server` child process.
type Proc struct {
	// DataDir is the --data-dir, kept across restarts.
	DataDir string
	// Addr is the Kafka listener, 127.0.0.1:port.
	Addr string
	// MetricsURL is the metrics listener's base URL (http://127.0.0.1:port).
	MetricsURL string
	// Overrides are the extra --override name=value settings.
	Overrides []string

	ports procPorts
	// logDir holds one stderr file per start.
	logDir string
	starts int

	cmd *exec.Cmd
	// stderrPath is the current child's stderr file.
	stderrPath string
	// exited is closed once the current child has been waited for;
	// waitErr is then its exit status.
	exited  chan struct{}
	waitErr error
}

// StartProc starts `samsa server` on a fresh data directory with the given
// extra --override settings (name=value), and waits until it answers
// ApiVersions. The child is killed when the test ends if it still runs; if
// the test failed, the tail of each start's stderr is logged. With
// SAMSA_TEST_LOGS=dir, the stderr files go to a new directory under dir,
// named after the test, and outlive it.
func StartProc(t testing.TB, overrides ...string) *Proc {
	t.Helper()
	p := &Proc{DataDir: t.TempDir(), logDir: keptLogDir(t), Overrides: overrides}
	p.killOnCleanup(t)
	p.start(t)
	return p
}

// keptLogDir is a directory for a server's stderr files: a new one under
// $SAMSA_TEST_LOGS that is kept when that is set, else the test's own
// temporary one.
func keptLogDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv("SAMSA_TEST_LOGS")
	if root == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server stderr kept in %s", dir)
	return dir
}

func (p *Proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Restart starts the server again on the same data directory (after Kill9
// or Stop), on the same ports if they are still free.
func (p *Proc) Restart(t testing.TB) {
	t.Helper()
	if p.running() {
		t.Fatalf("Restart: the server (pid %d) is still running", p.cmd.Process.Pid)
	}
	p.start(t)
}

// start launches the child, retrying with fresh ports when a port was
// taken between the probe and the bind.
func (p *Proc) start(t testing.TB) {
	t.Helper()
	bin := procSamsaBinary(t)
	if p.ports == (procPorts{}) {
		p.ports = newProcPorts(t)
	}
	for attempt := 1; ; attempt++ {
		err := p.startOnce(t, bin)
		if err == nil {
			return
		}
		if attempt < procStartAttempts && strings.Contains(err.Error(), "address already in use") {
			t.Logf("samsa server: port taken, retrying with new ports: %v", err)
			p.ports = newProcPorts(t)
			continue
		}
		t.Fatalf("start samsa server: %v\n--- stderr tail (%s) ---\n%s", err, p.stderrPath, procTailFile(p.stderrPath, 4096))
	}
}

func (p *Proc) startOnce(t testing.TB, bin string) error {
	p.starts++
	p.stderrPath = filepath.Join(p.logDir, fmt.Sprintf("stderr-%d.log", p.starts))
	stderr, err := os.Create(p.stderrPath)
	if err != nil {
		return err
	}
	defer stderr.Close() // the child has its own descriptor
	p.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.ports.kafka))
	p.MetricsURL = fmt.Sprintf("http://127.0.0.1:%d", p.ports.metrics)
	args := []string{"server",
		"--data-dir", p.DataDir,
		"--listeners", "PLAINTEXT://" + p.Addr,
		"--override", fmt.Sprintf("metadata.etcd.client.url=http://127.0.0.1:%d", p.ports.etcdClient),
		"--override", fmt.Sprintf("metadata.etcd.peer.url=http://127.0.0.1:%d", p.ports.etcdPeer),
		"--override", "metrics.listener=" + p.MetricsURL,
	}
	for _, o := range p.Overrides {
		args = append(args, "--override", o)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd = cmd
	exited := make(chan struct{})
	p.exited = exited
	go func() { // ends when the child exits; every path kills or stops it
		p.waitErr = cmd.Wait()
		close(exited)
	}()

	deadline := time.Now().Add(procStartTimeout)
	for {
		select {
		case <-exited:
			return fmt.Errorf("exited during start (%v): %s", p.waitErr, procTailFile(p.stderrPath, 2048))
		default:
		}
		err := procPing(p.Addr, time.Second)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("no ApiVersions answer on %s within %v: %v", p.Addr, procStartTimeout, err)
		}
		select {
		case <-exited:
		case <-time.After(50 * time.Millisecond): // poll interval
		}
	}
}

// Kill9 kills the server with SIGKILL and waits until it is gone.
func (p *Proc) Kill9(t testing.TB) {
	t.Helper()
	if !p.running() {
		t.Fatalf("Kill9: the server is not running")
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(procStopTimeout):
		t.Fatalf("the server did not die within %v of SIGKILL", procStopTimeout)
	}
	var ee *exec.ExitError
	if !errors.As(p.waitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("after SIGKILL: wait = %v, want killed by SIGKILL", p.waitErr)
	}
}

// Stop sends SIGTERM and requires a clean exit (status 0) within
// procStopTimeout; a server that does not stop in time is killed and the
// test fails.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	if !p.running() {
		t.Fatalf("Stop: the server is not running")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(procStopTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("the server did not exit within %v of SIGTERM; killed it", procStopTimeout)
	}
	if p.waitErr != nil {
		t.Fatalf("after SIGTERM: the server exited with %v, want status 0\n--- stderr tail ---\n%s", p.waitErr, procTailFile(p.stderrPath, 4096))
	}
}

// Stderr returns everything the current (or last) child wrote.
func (p *Proc) Stderr(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(p.stderrPath)
	if err != nil {
		t.Fatalf("read server stderr: %v", err)
	}
	return string(b)
}

func (p *Proc) logStderrTails(t testing.TB) {
	for i := 1; i <= p.starts; i++ {
		path := filepath.Join(p.logDir, fmt.Sprintf("stderr-%d.log", i))
		t.Logf("--- samsa server start %d: stderr tail (%s) ---\n%s", i, path, procTailFile(path, 4096))
	}
}

// procTailFile returns up to n bytes from the end of a file.
func procTailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	off := max(st.Size()-n, 0)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	return string(b)
}

// procPing sends one ApiVersions v3 request over a new connection
// and checks that a well-formed answer without error arrives.
func procPing(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-test", "0"
	if _, err := c.Write(protocol.AppendRequest(nil, req, 1, nil)); err != nil {
		return err
	}
	frame, err := protocol.ReadResponse(c, 1<<20)
	if err != nil {
		return err
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.SetVersion(3)
	corr, err := protocol.DecodeResponse(frame, resp)
	if err != nil {
		return err
	}
	if corr != 1 || resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return fmt.Errorf("ApiVersions: correlation id %d, error %d, %d keys", corr, resp.ErrorCode, len(resp.ApiKeys))
	}
	return nil
}

// TestProcessStartStop starts the binary, checks that it answers and logs
// its start, and stops it with SIGTERM: the exit status must be 0.
func TestProcessStartStop(t *testing.T) {
	p := StartProc(t)
	if err := procPing(p.Addr, 5*time.Second); err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	p.Stop(t)
	logs := p.Stderr(t)
	for _, want := range []string{`msg="broker started"`, `msg="broker stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("server log lacks %s:\n%s", want, logs)
		}
	}
	if err := procPing(p.Addr, time.Second); err == nil {
		t.Errorf("the server still answers on %s after a clean exit", p.Addr)
	}
	if strings.Contains(logs, "level=ERROR") {
		t.Errorf("server logged errors:\n%s", logs)
	}
}

// TestProcessRestartAfterKill9 restarts the binary, with the default
// session timeout, after SIGKILL: the new process must wait out its
// previous incarnation's etcd registration rather than exit with "broker id
// in use", then serve.
func TestProcessRestartAfterKill9(t *testing.T) {
	t.Parallel() // mostly waits for restarts; runs beside the other process tests
	p := StartProc(t)
	p.Kill9(t)
	start := time.Now()
	p.Restart(t)
	t.Logf("restarted after SIGKILL in %v", time.Since(start).Round(time.Millisecond))
	if err := procPing(p.Addr, 5*time.Second); err != nil {
		t.Fatalf("ApiVersions after restart: %v", err)
	}
	p.Stop(t)
}

// killOnCleanup kills the process when t ends, if it still runs, and logs
// the tail of each start's stderr if t failed.
func (p *Proc) killOnCleanup(t testing.TB) {
	t.Cleanup(func() {
		if p.running() {
			p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			p.logStderrTails(t)
		}
	})
}
