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
// An untraced run has a node without Strata: Down stops the agent (its
// process gone, its BPF programs detached with the descriptors it held) and
// the collector before it, and Up starts them again, on the same store and
// spool, before a traced run. Both return only once the processes have
// exited, or have started and gone quiet, so that neither their start nor
// their stop falls inside a measured run.
type Node struct {
	env       Env
	dir       string
	opts      NodeOptions
	Collector string // host:port, while up
	Socket    string // the agent's hook socket
	HTTP      string // the agent's metrics address, while up
	collector *testenv.Proc
	agent     *testenv.Proc
}

// NodeOptions configure StartNode.
type NodeOptions struct {
	// History is given to the collector's --history (a directory or a
	// history-server URL; the server need not be up yet: the poller
	// retries every poll).
	History string
	// AgentArgs are more strata-agent flags, after the node's own (a
	// later flag wins: "--damon off" turns off what the default runs).
	AgentArgs []string
}

// StartNode starts strata-collector and strata-agent under e.Work/name.
func StartNode(e Env, name string, o NodeOptions) (n *Node, err error) {
	n = &Node{env: e, dir: filepath.Join(e.Work, name), opts: o, Socket: filepath.Join(e.Work, name, "hook.sock")}
	if err := n.start(); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

// start starts the collector, then the agent, and waits until both serve.
// Each start takes free ports anew (Collector and HTTP change), so that a
// port another process took while the node was down cannot stop it.
func (n *Node) start() (err error) {
	e := n.env
	for _, addr := range []*string{&n.Collector, &n.HTTP} {
		port, err := testenv.FreePort()
		if err != nil {
			return err
		}
		*addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	// A loopback node for one run: no TLS, no token (--insecure, --http-insecure).
	args := []string{"chrt", "--idle", "0", filepath.Join(e.Bin, "strata-collector"), "--listen", n.Collector, "--store-dir", filepath.Join(n.dir, "store"),
		"--insecure"}
	if n.opts.History != "" {
		args = append(args, "--history", n.opts.History, "--history-interval", "2s")
	}
	if n.collector, err = testenv.StartProc("strata-collector", nil, args...); err != nil {
		return err
	}
	if err := testenv.WaitFor("the collector", 60*time.Second, n.collector, func() bool { return testenv.Listening(n.Collector) }); err != nil {
		return err
	}
	agentArgs := append([]string{filepath.Join(e.Bin, "strata-agent"),
		"--node-name", "smtt-node", "--hook-socket", n.Socket, "--collector", n.Collector,
		"--spool-dir", filepath.Join(n.dir, "spool"), "--http", n.HTTP, "--http-insecure"}, n.opts.AgentArgs...)
	n.agent, err = testenv.StartProc("strata-agent", nil, agentArgs...)
	if err != nil {
		return err
	}
	return testenv.WaitFor("the agent", 60*time.Second, n.agent, func() bool {
		resp, err := http.Get("http://" + n.HTTP + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
}

// Stop ends the agent, then the collector. It is nil-safe and may be
// called on a node that is down.
func (n *Node) Stop() {
	if n == nil {
		return
	}
	n.agent.Stop()
	n.collector.Stop()
	n.agent, n.collector = nil, nil
}

// IsUp reports whether the agent and the collector run (Up, or StartNode,
// without a Down since).
func (n *Node) IsUp() bool { return n.agent != nil }

// Down stops the agent, then the collector, and returns once both have
// exited: nothing of Strata is left on the node (the agent pins no BPF
// object, so its programs are detached as its process ends). Everything
// the agent was told is delivered first (Drained), so Down loses nothing.
func (n *Node) Down() error {
	if !n.IsUp() {
		return nil
	}
	if err := n.Drained(3 * time.Minute); err != nil {
		return err
	}
	n.Stop()
	return nil
}

// Up starts a node that is down on its store and spool, and returns once
// both processes serve and have gone quiet (see settle).
func (n *Node) Up() error {
	if n.IsUp() {
		return nil
	}
	if err := n.start(); err != nil {
		logs := n.Logs()
		n.Stop()
		return fmt.Errorf("restart node: %w\n%s", err, logs)
	}
	return n.settle(30 * time.Second)
}

// settle waits until the agent and the collector use less than 10 ms of
// CPU in 250 ms (their start-up done: BPF programs verified and attached,
// the store opened), at most timeout.
func (n *Node) settle(timeout time.Duration) error {
	const window, quiet = 250 * time.Millisecond, 10 * time.Millisecond
	prev, err := n.CPU()
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(timeout); ; {
		time.Sleep(window)
		cur, err := n.CPU()
		if err != nil {
			return err
		}
		if cur-prev < quiet {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the node still used %v of CPU in %v after %v", cur-prev, window, timeout)
		}
		prev = cur
	}
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
// nothing unacknowledged: everything a finished run caused is stored. A
// node that is down has nothing pending (Down drained it). It asks the
// agent's /metrics every drainPoll: each scrape costs the agent about
// 1.5 ms of CPU, which a traced run's CPU would otherwise count ten times
// a second.
func (n *Node) Drained(timeout time.Duration) error {
	if !n.IsUp() {
		return nil
	}
	for deadline := time.Now().Add(timeout); ; {
		m, err := n.Metrics()
		if err == nil && m["strata_hook_sessions_active"] == 0 && m["strata_live_blocks"] == 0 &&
			m["strata_spool_pending_batches"] == 0 {
			return nil
		}
		if done, perr := n.agent.Exited(); done {
			return fmt.Errorf("the agent exited (%v) while delivering:\n%s", perr, n.agent.Output(4000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for the agent to deliver everything (last scrape: %v)", timeout, err)
		}
		time.Sleep(drainPoll)
	}
}

// lossCounters are the agent's counters of what it could not take in or
// deliver; any of them above zero means a traced run's data is incomplete.
var lossCounters = []string{
	"strata_hook_sessions_malformed_total", // a hook the agent cannot read (e.g. another wire format)
	"strata_records_dropped_total",
	"strata_stream_records_dropped_total",
	"strata_stream_batches_rejected_total",
}

// Complete reports an error naming every loss counter of the agent above
// zero since it was last started; nil on a node that is down.
func (n *Node) Complete() error {
	if !n.IsUp() {
		return nil
	}
	m, err := n.Metrics()
	if err != nil {
		return err
	}
	var lost []string
	for _, c := range lossCounters {
		if m[c] > 0 {
			lost = append(lost, fmt.Sprintf("%s=%g", c, m[c]))
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("the agent lost data: %s", strings.Join(lost, " "))
	}
	return nil
}

// drainPoll is how often Drained asks the agent.
const drainPoll = 500 * time.Millisecond

// CPU is the CPU time the agent and the collector have used since they
// were last started (0 when the node is down).
func (n *Node) CPU() (time.Duration, error) {
	agent, collector, err := n.CPUs()
	return agent + collector, err
}

// CPUs is CPU's two parts: the agent's and the collector's.
func (n *Node) CPUs() (agent, collector time.Duration, err error) {
	if !n.IsUp() {
		return 0, 0, nil
	}
	if agent, err = n.agent.CPU(); err != nil {
		return 0, 0, err
	}
	if collector, err = n.collector.CPU(); err != nil {
		return 0, 0, err
	}
	return agent, collector, nil
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
