package yarn

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/test/testenv"
)

// nodeName is the agent's --node-name: the host every record must name.
const nodeName = "yarn-node"

// strataNode is the Strata side of the node: a collector with its embedded
// store and an agent whose hook socket the executors report to.
type strataNode struct {
	collector, socket string
}

func startNode(t *testing.T) *strataNode {
	t.Helper()
	dir := t.TempDir()
	n := &strataNode{collector: listenAddr(t), socket: filepath.Join(dir, "hook.sock")}
	start := func(name, addr string, argv ...string) {
		p := testenv.Daemon(t, name, nil, argv...)
		if err := testenv.WaitFor(name, 60*time.Second, p, func() bool { return ready(addr) }); err != nil {
			t.Fatal(err)
		}
	}
	start("collector", "tcp:"+n.collector, testenv.Built(t, "strata-collector"),
		"--listen", n.collector, "--store-dir", filepath.Join(dir, "store"), "--insecure")
	web := listenAddr(t)
	start("agent", "http://"+web+"/healthz", testenv.Built(t, "strata-agent"),
		"--node-name", nodeName, "--hook-socket", n.socket, "--collector", n.collector,
		"--spool-dir", filepath.Join(dir, "spool"), "--http", web, "--http-insecure", "--flush-interval", "50ms")
	return n
}

// ready says whether a tcp:ADDR accepts connections or an http URL
// answers 200.
func ready(addr string) bool {
	if a, ok := strings.CutPrefix(addr, "tcp:"); ok {
		return testenv.Listening(a)
	}
	resp, err := http.Get(addr)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func listenAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// query runs `strata CMD --app APP -o json ARGS...` against the node's
// collector and decodes its lines.
func query[T any](t *testing.T, n *strataNode, cmd, app string, args ...string) []T {
	t.Helper()
	argv := append([]string{cmd, "--app", app, "-o", "json", "--collector", n.collector}, args...)
	out, err := exec.Command(testenv.Built(t, "strata"), argv...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && strings.Contains(string(ee.Stderr), "no traces of application ") {
		return nil // the collector holds no record of the app (yet): the checks poll
	}
	if err != nil {
		t.Fatalf("strata %s: %v", strings.Join(argv, " "), err)
	}
	var rows []T
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var r T
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("strata %s: decode: %v", cmd, err)
		}
		rows = append(rows, r)
	}
	return rows
}

func records(t *testing.T, n *strataNode, app string, args ...string) []jsonform.Record {
	return query[jsonform.Record](t, n, "records", app, args...)
}

func trace(t *testing.T, n *strataNode, app string, args ...string) []jsonform.Page {
	return query[jsonform.Page](t, n, "trace", app, args...)
}

// live replays records: every range registered and not freed, at its
// latest place, by (pid, hook block id).
func live(rs []jsonform.Record) map[[2]uint64]jsonform.Record {
	m := map[[2]uint64]jsonform.Record{}
	for _, r := range rs {
		k := [2]uint64{uint64(r.PID), r.HookBlockID}
		switch r.Access {
		case "alloc", "move":
			m[k] = r
		case "free":
			delete(m, k)
		}
	}
	return m
}

// eventually retries check until it returns nil and fails the test with
// its last error after timeout (records reach the collector in batches;
// Spark's REST API follows its block manager asynchronously).
func eventually(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	var last error
	if err := testenv.WaitFor(what, timeout, nil, func() bool { last = check(); return last == nil }); err != nil {
		t.Fatalf("%v: %v", err, last)
	}
}
