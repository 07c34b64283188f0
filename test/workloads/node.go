package workloads

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

// Node is the Strata side of a run: a collector (embedded store) and an
// agent whose hook socket the traced runs connect to.
//
// The agent runs as a DaemonSet deploys it: default flags (its threads
// under SCHED_BATCH, --cpu-policy), on the cores Spark uses. The collector
// stands in for a service that lives elsewhere in a cluster (one per
// cluster, not per node); having only this machine, it runs under
// SCHED_IDLE (chrt --idle), so its work falls into the cores' idle time
// rather than into the measured job's. Its CPU time still counts in a
// traced run's CPU.
//
// Between traced runs the node is paused (Pause: SIGSTOP), so that an
// untraced run has the machine as it would without Strata: no agent or
// collector wakes up during it. The probes stay attached; for a process
// no hook reported, a page fault costs only their in-kernel filter.
type Node struct {
	env       Env
	dir       string
	Collector string // host:port
	Socket    string // the agent's hook socket
	HTTP      string // the agent's metrics address
	collector *testenv.Proc
	agent     *testenv.Proc
}

// NodeOptions configure StartNode.
type NodeOptions struct {
	// History is given to the collector's --history (a directory or a
	// history-server URL; the server need not be up yet: the poller
	// retries every poll).
	History string
}

// StartNode starts strata-collector and strata-agent under e.Work/name.
func StartNode(e Env, name string, o NodeOptions) (n *Node, err error) {
	n = &Node{env: e, dir: filepath.Join(e.Work, name)}
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	n.Collector = fmt.Sprintf("127.0.0.1:%d", port)
	// A loopback node for one run: no TLS, no token (--insecure, --http-insecure).
	args := []string{"chrt", "--idle", "0", filepath.Join(e.Bin, "strata-collector"), "--listen", n.Collector, "--store-dir", filepath.Join(n.dir, "store"),
		"--insecure"}
	if o.History != "" {
		args = append(args, "--history", o.History, "--history-interval", "2s")
	}
	if n.collector, err = testenv.StartProc("strata-collector", nil, args...); err != nil {
		return nil, err
	}
	if err := testenv.WaitFor("the collector", 60*time.Second, n.collector, func() bool { return testenv.Listening(n.Collector) }); err != nil {
		return nil, err
	}
	if port, err = testenv.FreePort(); err != nil {
		return nil, err
	}
	n.HTTP = fmt.Sprintf("127.0.0.1:%d", port)
	n.Socket = filepath.Join(n.dir, "hook.sock")
	n.agent, err = testenv.StartProc("strata-agent", nil, filepath.Join(e.Bin, "strata-agent"),
		"--node-name", "smtt-node", "--hook-socket", n.Socket, "--collector", n.Collector,
		"--spool-dir", filepath.Join(n.dir, "spool"), "--http", n.HTTP, "--http-insecure")
	if err != nil {
		return nil, err
	}
	if err := testenv.WaitFor("the agent", 60*time.Second, n.agent, func() bool {
		resp, err := http.Get("http://" + n.HTTP + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}); err != nil {
		return nil, err
	}
	return n, nil
}

// Stop ends the agent, then the collector.
func (n *Node) Stop() {
	if n == nil {
		return
	}
	n.agent.Stop()
	n.collector.Stop()
}

// Pause stops the agent and the collector (SIGSTOP); Resume continues
// them. Stop works on a paused node.
func (n *Node) Pause() error {
	if err := n.agent.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	return n.collector.Signal(syscall.SIGSTOP)
}

// Resume continues a paused node.
func (n *Node) Resume() error {
	if err := n.collector.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	return n.agent.Signal(syscall.SIGCONT)
}

// Logs are the last bytes the agent and collector wrote.
func (n *Node) Logs() string {
	var b strings.Builder
	for _, p := range []*testenv.Proc{n.agent, n.collector} {
		if p != nil {
			fmt.Fprintf(&b, "--- %s:\n%s\n", p.Name, p.Output(4000))
		}
	}
	return b.String()
}

// Metrics reads the agent's /metrics.
func (n *Node) Metrics() (map[string]float64, error) {
	resp, err := http.Get("http://" + n.HTTP + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("get agent metrics: %w", err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
		}
	}
	return m, sc.Err()
}

// Drained waits until the agent has no hook session, no live block and
// nothing unacknowledged: everything a finished run caused is stored.
func (n *Node) Drained(timeout time.Duration) error {
	return testenv.WaitFor("the agent to deliver everything", timeout, n.agent, func() bool {
		m, err := n.Metrics()
		return err == nil && m["strata_hook_sessions_active"] == 0 && m["strata_live_blocks"] == 0 &&
			m["strata_spool_pending_batches"] == 0
	})
}

// CPU is the CPU time the agent and the collector have used so far.
func (n *Node) CPU() (time.Duration, error) {
	var sum time.Duration
	for _, p := range []*testenv.Proc{n.agent, n.collector} {
		c, err := p.CPU()
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// Strata runs the strata CLI against the node's collector.
func (n *Node) Strata(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.env.Bin, "strata"), append(args, "--collector", n.Collector)...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return out, fmt.Errorf("strata %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return out, fmt.Errorf("strata %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}
