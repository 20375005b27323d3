package docker

// Finer faults than Docker's own: packet filters between two brokers, and
// the loss of a crashed broker's log tail.
//
// A cut drops packets between two brokers inside both containers' network
// namespaces: the host's iptables runs in a container's namespace through
// nsenter (the image is FROM scratch and has no tools; the test runs as
// root, as Docker needs). Unlike Disconnect, a cut leaves every broker
// reachable by clients, and it can be limited to one port: the Kafka port
// (the brokers' replica fetches) or etcd's peer port (the embedded etcd
// members' traffic, so a broker loses etcd but not its followers). A
// container that starts again gets a new network namespace, so a node's
// cuts are applied again after every start, the supervisor's included: a
// cut-off host whose broker restarts is still cut off.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	samsatest "github.com/samsa-io/samsa/test"
)

// faultChain is the iptables chain in each container that holds its cuts.
const faultChain = "samsa-faults"

// cut drops packets from peer (to and from port, or every packet when port
// is 0).
type cut struct {
	peer string
	port int
}

// Cut drops every packet between brokers a and b on port (the Kafka port,
// etcd's peer port, or 0 for every port), both ways, until Uncut or
// HealCuts.
func (c *Cluster) Cut(a, b *Node, port int) {
	c.t.Helper()
	a.setCut(cut{b.IP, port}, true)
	b.setCut(cut{a.IP, port}, true)
}

// Uncut removes a cut made by Cut.
func (c *Cluster) Uncut(a, b *Node, port int) {
	c.t.Helper()
	a.setCut(cut{b.IP, port}, false)
	b.setCut(cut{a.IP, port}, false)
}

// HealCuts removes every cut.
func (c *Cluster) HealCuts() {
	c.t.Helper()
	for _, n := range c.Nodes {
		n.mu.Lock()
		n.cuts = nil
		err := n.applyCutsLocked()
		n.mu.Unlock()
		if err != nil {
			c.t.Fatalf("broker %d: %v", n.ID, err)
		}
	}
}

// Cuts describes a node's cuts, e.g. "10.200.1.12:9092 10.200.1.13:*".
func (n *Node) Cuts() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var s []string
	for k := range n.cuts {
		port := "*"
		if k.port != 0 {
			port = strconv.Itoa(k.port)
		}
		s = append(s, k.peer+":"+port)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func (n *Node) setCut(k cut, on bool) {
	n.c.t.Helper()
	n.mu.Lock()
	if on {
		if n.cuts == nil {
			n.cuts = map[cut]bool{}
		}
		n.cuts[k] = true
	} else {
		delete(n.cuts, k)
	}
	err := n.applyCutsLocked()
	n.mu.Unlock()
	if err != nil {
		n.c.t.Fatalf("broker %d: %v", n.ID, err)
	}
}

// applyCutsLocked makes the container's filter chain hold exactly the
// node's cuts. A container that is not running has no namespace; its cuts
// are applied when it starts. n.mu must be held.
func (n *Node) applyCutsLocked() error {
	pid, err := n.pid()
	if err != nil || pid == "" {
		return err
	}
	if err := n.applyCutsIn(pid); err != nil {
		// The broker may have exited in between (a lost registration):
		// its next start applies the cuts.
		if now, perr := n.pid(); perr == nil && now != pid {
			return nil
		}
		return err
	}
	return nil
}

// pid is the container's main process id, "" if it is not running.
func (n *Node) pid() (string, error) {
	out, err := docker("inspect", "-f", "{{.State.Running}} {{.State.Pid}}", n.Name)
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) != 2 || f[0] != "true" || f[1] == "0" {
		return "", nil
	}
	return f[1], nil
}

// applyCutsIn sets the filter chain in the network namespace of process
// pid.
func (n *Node) applyCutsIn(pid string) error {
	ipt := func(args ...string) error {
		cmd := exec.Command("nsenter", append([]string{"-t", pid, "-n", "iptables", "-w"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables %s in broker %d's namespace: %w: %s", strings.Join(args, " "), n.ID, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	// The chain and its jump from INPUT, once per namespace.
	if ipt("-L", faultChain, "-n") != nil {
		if err := ipt("-N", faultChain); err != nil {
			return err
		}
		if err := ipt("-I", "INPUT", "-j", faultChain); err != nil {
			return err
		}
	}
	if err := ipt("-F", faultChain); err != nil {
		return err
	}
	for k := range n.cuts {
		if k.port == 0 {
			if err := ipt("-A", faultChain, "-s", k.peer, "-j", "DROP"); err != nil {
				return err
			}
			continue
		}
		// Connections to the peer's port and from it: dropping what
		// arrives on both brokers cuts both directions.
		for _, dir := range []string{"--dport", "--sport"} {
			if err := ipt("-A", faultChain, "-s", k.peer, "-p", "tcp", dir, strconv.Itoa(k.port), "-j", "DROP"); err != nil {
				return err
			}
		}
	}
	return nil
}

// DataDir is the host directory of the broker's data volume (its
// /data), readable by the test (which runs as root).
func (n *Node) DataDir() string {
	n.c.t.Helper()
	out, err := docker("inspect", "-f", `{{range .Mounts}}{{if eq .Destination "/data"}}{{.Source}}{{end}}{{end}}`, n.Name)
	if err != nil || strings.TrimSpace(out) == "" {
		n.c.t.Fatalf("broker %d: data volume: %v %q", n.ID, err, out)
	}
	return strings.TrimSpace(out)
}

// LoseTail models a crash that loses data the disk never got: it cuts the
// tail off the active segment of every partition in the broker's data
// directory, at a random point within the last maxBytes of whole batches
// (mid-batch, as a torn write, or at a batch boundary), and returns what
// it cut. The broker must be down (Kill). The cut may reach below the
// last fsync, which makes this a disk that lost acknowledged data: a
// superset of losing the unflushed page cache, and safe for the cluster
// as long as no more than min.insync.replicas-1 brokers lose data at once.
func (n *Node) LoseTail(rnd *rand.Rand, maxBytes int64) string {
	n.c.t.Helper()
	n.mu.Lock()
	down := n.down
	n.mu.Unlock()
	if !down {
		n.c.t.Fatalf("broker %d: LoseTail of a running broker", n.ID)
	}
	dirs, err := filepath.Glob(filepath.Join(n.DataDir(), "logs", "*"))
	if err != nil {
		n.c.t.Fatal(err)
	}
	sort.Strings(dirs)
	var cuts []string
	for _, dir := range dirs {
		segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		if len(segs) == 0 {
			continue
		}
		sort.Strings(segs)
		last := segs[len(segs)-1]
		b, err := os.ReadFile(last)
		if err != nil {
			n.c.t.Fatal(err)
		}
		batches := samsatest.SegmentBatches(b)
		end := int64(0)
		for _, bt := range batches {
			end += int64(len(bt.Bytes))
		}
		if end == 0 {
			continue
		}
		cutAt := max(0, end-1-rnd.Int64N(min(maxBytes, end)))
		if rnd.IntN(2) == 0 {
			// At the start of the batch holding cutAt.
			pos := int64(0)
			for _, bt := range batches {
				if pos+int64(len(bt.Bytes)) > cutAt {
					break
				}
				pos += int64(len(bt.Bytes))
			}
			cutAt = pos
		}
		if err := os.Truncate(last, cutAt); err != nil {
			n.c.t.Fatal(err)
		}
		cuts = append(cuts, fmt.Sprintf("%s/%s -%dB", filepath.Base(dir), filepath.Base(last), end-cutAt))
	}
	return strings.Join(cuts, ", ")
}
