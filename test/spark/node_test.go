package spark

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

// startDaemon starts a process for the test in its own process group (a
// Spark worker's executors are in its group too); it is killed, group and
// all, when the test ends.
func startDaemon(t *testing.T, name string, env []string, argv ...string) *testenv.Proc {
	t.Helper()
	return testenv.Daemon(t, name, env, argv...)
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	if err := testenv.WaitFor(what, timeout, nil, ok); err != nil {
		t.Fatal(err)
	}
}

// node is the Strata side of the test: a collector and an agent.
type node struct {
	dir, collector, socket, http string
	agent                        *testenv.Proc
}

func startNode(t *testing.T) *node {
	t.Helper()
	n := &node{dir: t.TempDir()}
	n.collector = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startDaemon(t, "collector", nil, testenv.Built(t, "strata-collector"),
		"--listen", n.collector, "--store-dir", filepath.Join(n.dir, "store"), "--insecure")
	waitFor(t, "collector", 60*time.Second, func() bool { return testenv.Listening(n.collector) })
	n.socket = filepath.Join(n.dir, "hook.sock")
	n.startAgent(t)
	return n
}

func (n *node) startAgent(t *testing.T) {
	t.Helper()
	n.http = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n.agent = startDaemon(t, "agent", nil, testenv.Built(t, "strata-agent"),
		"--node-name", "spark-node", "--hook-socket", n.socket, "--collector", n.collector,
		"--spool-dir", filepath.Join(n.dir, "spool"), "--http", n.http, "--http-insecure", "--flush-interval", "50ms")
	waitFor(t, "agent", 30*time.Second, func() bool {
		resp, err := http.Get("http://" + n.http + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
}

// strata runs the strata CLI against the node's collector.
func (n *node) strata(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(testenv.Built(t, "strata"), append(args, "--collector", n.collector)...).CombinedOutput()
	if err != nil && strings.Contains(string(out), "no traces of application ") {
		return "" // the collector holds no record of the app (yet): the checks poll
	}
	if err != nil {
		t.Fatalf("strata %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// tracePage is one line of `strata trace -o json` (the fields used here).
type tracePage struct {
	Time       time.Time `json:"time"`
	Access     string    `json:"access"`
	RDD        int32     `json:"rdd"`
	Partition  int32     `json:"partition"`
	BlockID    string    `json:"block_id"`
	ExecutorID string    `json:"executor_id"`
	PID        uint32    `json:"pid"`
	VAddr      string    `json:"vaddr"`
	Present    bool      `json:"present"`
}

func (n *node) trace(t *testing.T, app string, args ...string) []tracePage {
	t.Helper()
	var out []tracePage
	dec := json.NewDecoder(strings.NewReader(n.strata(t, append([]string{"trace", "--app", app, "-o", "json"}, args...)...)))
	for dec.More() {
		var p tracePage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode trace: %v", err)
		}
		out = append(out, p)
	}
	return out
}

// metric reads one value from the agent's /metrics.
func (n *node) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + n.http + "/metrics")
	if err != nil {
		t.Fatalf("get metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("metric %q: %v", l, err)
			}
			return v
		}
	}
	t.Fatalf("agent has no metric %s", name)
	return 0
}

// recordLine is one line of `strata records -o json`.
type recordLine struct {
	Time          time.Time `json:"time"`
	Access        string    `json:"access"`
	RDD           int32     `json:"rdd"`
	Partition     int32     `json:"partition"`
	BlockID       string    `json:"block_id"`
	HookBlockID   uint64    `json:"hook_block_id"`
	ExecutorID    string    `json:"executor_id"`
	PID           uint32    `json:"pid"`
	Mode          string    `json:"mode"`
	Location      string    `json:"location"`
	Kind          string    `json:"kind"`
	Chunk         uint32    `json:"chunk"`
	Chunks        uint32    `json:"chunks"`
	StageID       int32     `json:"stage_id"`
	StageAttempt  int32     `json:"stage_attempt"`
	TaskAttemptID int64     `json:"task_attempt_id"`
	ObjectGraph   bool      `json:"object_graph"`
	CachedBatch   bool      `json:"cached_batch"`
	Column        *int32    `json:"column"`
	ColumnName    string    `json:"column_name"`
	VAddr         string    `json:"vaddr"`
	Length        uint64    `json:"length"`
	FreeReason    string    `json:"free_reason"`
	Coverage      *struct {
		Resolution string `json:"resolution"`
		Bytes      uint64 `json:"bytes"`
		Objects    uint64 `json:"objects"`
		Extents    uint32 `json:"extents"`
		Detail     string `json:"detail"`
	} `json:"coverage"`
}

// addr is the record's virtual address.
func (r recordLine) addr(t *testing.T) uint64 {
	t.Helper()
	a, err := strconv.ParseUint(r.VAddr, 0, 64)
	if err != nil {
		t.Fatalf("record %+v: vaddr: %v", r, err)
	}
	return a
}

// rangeKey names one range the hook registered: a chunk of a block, a page.
type rangeKey struct {
	pid uint32
	id  uint64
}

func (r recordLine) key() rangeKey { return rangeKey{r.PID, r.HookBlockID} }

// history is an application's records in time order, as `strata records`
// lists them.
type history []recordLine

// records runs `strata records --app APP -o json` with more flags.
func (n *node) records(t *testing.T, app string, args ...string) history {
	t.Helper()
	var out history
	dec := json.NewDecoder(strings.NewReader(n.strata(t, append([]string{"records", "--app", app, "-o", "json"}, args...)...)))
	for dec.More() {
		var r recordLine
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("decode records: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// live replays the history: every range registered and not freed, with its
// latest place (ALLOC or MOVE).
func (h history) live() map[rangeKey]recordLine {
	m := map[rangeKey]recordLine{}
	for _, r := range h {
		switch r.Access {
		case "alloc", "move":
			m[r.key()] = r
		case "free":
			delete(m, r.key())
		}
	}
	return m
}

// chunks returns the live ranges of the Spark block named name, by chunk.
func (h history) chunks(name string) []recordLine {
	var out []recordLine
	for _, r := range h.live() {
		if r.BlockID == name {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Chunk < out[j].Chunk })
	return out
}

// since returns the records after t.
func (h history) since(t time.Time) history {
	var out history
	for _, r := range h {
		if r.Time.After(t) {
			out = append(out, r)
		}
	}
	return out
}

// with returns the records whose access is access.
func (h history) with(access string) history {
	var out history
	for _, r := range h {
		if r.Access == access {
			out = append(out, r)
		}
	}
	return out
}

// blocks returns the distinct block names of h.
func (h history) blocks() map[string]bool {
	m := map[string]bool{}
	for _, r := range h {
		m[r.BlockID] = true
	}
	return m
}
