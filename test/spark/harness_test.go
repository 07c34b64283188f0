package spark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/test/testenv"
)

// The job's record layout: 32-byte stamps "STRATAr%06dp%06do%011d".
const stampLen = 32

// Spark series the tests run, oldest first.
var series = []string{"3.5", "4"}

// hookOpts runs the real `strata hook-opts` for the built hook files.
func hookOpts(t testing.TB, socket string) string {
	t.Helper()
	strata := testenv.Built(t, "strata")
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	out, err := exec.Command(strata, "hook-opts", "--dir", filepath.Dir(jar), "--socket", socket).Output()
	if err != nil {
		t.Fatalf("strata hook-opts: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// sparkJobJar returns bin/sparkjob/sparkjob-VERSION.jar for a SPARK_HOME.
func sparkJobJar(t testing.TB, home string) string {
	t.Helper()
	v := strings.TrimPrefix(filepath.Base(home), "spark-")
	return testenv.Built(t, filepath.Join("sparkjob", "sparkjob-"+v+".jar"))
}

// syncBuffer keeps a process's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// step is one JSON line of the job.
type step struct {
	Step     string `json:"step"`
	App      string `json:"app"`
	UI       string `json:"ui"`
	PID      int    `json:"pid"`
	Master   string `json:"master"`
	Ser      int    `json:"ser"`
	SerHeap  int    `json:"ser_heap"` // the on-heap MEMORY_ONLY_SER RDD of an --offheap run
	Deser    int    `json:"deser"`
	DF       int    `json:"df"`
	RDD      int    `json:"rdd"`
	Victim   int    `json:"victim"`
	SerLevel string `json:"ser_level"`
	Parts    int    `json:"parts"`
	Records  int    `json:"records"`
	Record   int    `json:"record"`
}

// job is StrataJob running under spark-submit.
type job struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	steps  chan step
	stderr *syncBuffer
	done   chan error
}

// startJob runs spark-submit with the given --conf settings and job flags.
// The job is killed when the test ends.
func startJob(t *testing.T, home, master string, conf []string, args ...string) *job {
	t.Helper()
	argv := []string{"--master", master, "--class", "org.stratatrace.sparkjob.StrataJob"}
	for _, c := range conf {
		argv = append(argv, "--conf", c)
	}
	argv = append(append(argv, sparkJobJar(t, home)), args...)
	j := &job{
		cmd:    exec.Command(filepath.Join(home, "bin", "spark-submit"), argv...),
		steps:  make(chan step, 8),
		stderr: &syncBuffer{},
		done:   make(chan error, 1),
	}
	j.cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
	j.cmd.Stderr = j.stderr
	var err error
	if j.stdin, err = j.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("start spark-submit: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var s step
			if json.Unmarshal(sc.Bytes(), &s) == nil && s.Step != "" {
				j.steps <- s
			}
		}
		close(j.steps)
		j.done <- j.cmd.Wait()
	}()
	t.Cleanup(func() {
		j.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("--- job stderr (last 6000 bytes):\n%s", tail(j.stderr.String(), 6000))
		}
	})
	return j
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// next waits for the step named name.
func (j *job) next(t *testing.T, name string) step {
	t.Helper()
	timeout := time.After(5 * time.Minute)
	for {
		select {
		case s, ok := <-j.steps:
			if !ok {
				t.Fatalf("job ended before step %q", name)
			}
			if s.Step == name {
				return s
			}
			t.Fatalf("job step %q, want %q", s.Step, name)
		case <-timeout:
			t.Fatalf("no step %q after 5 minutes", name)
		}
	}
}

// proceed lets the job go on to its next step.
func (j *job) proceed(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(j.stdin, "next\n"); err != nil {
		t.Fatalf("tell job to proceed: %v", err)
	}
}

// finish lets the job end and waits for its exit; it returns the driver
// JVM's stderr.
func (j *job) finish(t *testing.T) string {
	t.Helper()
	j.next(t, "done")
	j.stdin.Close()
	select {
	case err := <-j.done:
		if err != nil {
			t.Fatalf("job exited: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("job did not exit")
	}
	return j.stderr.String()
}

// hookCounters parses the hook's last "strata-hook: sent=N dropped=N ..." line.
func hookCounters(t *testing.T, stderr string) map[string]int64 {
	t.Helper()
	i := strings.LastIndex(stderr, "strata-hook: sent=")
	if i < 0 {
		t.Fatalf("no strata-hook counters line in the JVM's stderr")
	}
	line, _, _ := strings.Cut(stderr[i+len("strata-hook: "):], "\n")
	m := map[string]int64{}
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("counters line %q: %v", line, err)
		}
		m[k] = n
	}
	return m
}

// ---- Spark's live REST API (the driver UI)

type restPartition struct {
	BlockName    string   `json:"blockName"`
	StorageLevel string   `json:"storageLevel"`
	MemoryUsed   int64    `json:"memoryUsed"`
	DiskUsed     int64    `json:"diskUsed"`
	Executors    []string `json:"executors"`
}

type restRDD struct {
	ID                  int             `json:"id"`
	Name                string          `json:"name"`
	NumCachedPartitions int             `json:"numCachedPartitions"`
	StorageLevel        string          `json:"storageLevel"`
	MemoryUsed          int64           `json:"memoryUsed"`
	Partitions          []restPartition `json:"partitions"`
}

type restStage struct {
	StageID   int   `json:"stageId"`
	AttemptID int   `json:"attemptId"`
	RDDIDs    []int `json:"rddIds"`
}

// getJSON GETs url into v; it returns false on 404.
func getJSON(t *testing.T, url string, v any) bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return false
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: decode: %v\n%s", url, err, body)
	}
	return true
}

// storage returns Spark's view of one cached RDD; ok is false when Spark
// no longer lists it.
func storage(t *testing.T, s step, rdd int) (r restRDD, ok bool) {
	t.Helper()
	ok = getJSON(t, fmt.Sprintf("%s/api/v1/applications/%s/storage/rdd/%d", s.UI, s.App, rdd), &r)
	return r, ok
}

// storageUntil polls Spark's view of an RDD until ok accepts it (Spark's
// REST API follows the block manager through its asynchronous listener
// bus) and returns the last view.
func storageUntil(t *testing.T, s step, rdd int, ok func(r restRDD, listed bool) bool) (restRDD, bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, listed := storage(t, s, rdd)
		if ok(r, listed) || time.Now().After(deadline) {
			return r, listed
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func stageInfo(t *testing.T, s step, id, attempt int) restStage {
	t.Helper()
	var st restStage
	if !getJSON(t, fmt.Sprintf("%s/api/v1/applications/%s/stages/%d/%d", s.UI, s.App, id, attempt), &st) {
		t.Fatalf("Spark does not know stage %d attempt %d", id, attempt)
	}
	return st
}

// ---- the stamped records

type stamp struct {
	rdd, part int
	off       int64
}

// stamps finds every stamp in b.
func stamps(b []byte) []stamp {
	var out []stamp
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("STRATAr"))
		if k < 0 {
			return out
		}
		i += k
		if i+stampLen > len(b) {
			return out
		}
		var s stamp
		if _, err := fmt.Sscanf(string(b[i:i+stampLen]), "STRATAr%06dp%06do%011d", &s.rdd, &s.part, &s.off); err == nil {
			out = append(out, s)
		}
		i += stampLen
	}
}

// checkStamps checks that b holds every stamp of (rdd, part) exactly once,
// in order, and no stamp of anything else.
func checkStamps(b []byte, rdd, part int, records, record int) error {
	got := stamps(b)
	want := records * record / stampLen
	if len(got) != want {
		return fmt.Errorf("%d stamps, want %d", len(got), want)
	}
	for i, s := range got {
		if s.rdd != rdd || s.part != part || s.off != int64(i*stampLen) {
			return fmt.Errorf("stamp %d is rdd %d partition %d offset %d, want rdd %d partition %d offset %d",
				i, s.rdd, s.part, s.off, rdd, part, i*stampLen)
		}
	}
	return nil
}

// checkRefs checks that every reference of ref bytes in an object array's
// data is set (a deserialized block's array holds no null record).
func checkRefs(m []byte, ref uint64) error {
	if ref != 4 && ref != 8 {
		return fmt.Errorf("reference size %d", ref)
	}
	for i := uint64(0); i+ref <= uint64(len(m)); i += ref {
		if v := binary.LittleEndian.Uint32(m[i:]); v == 0 && (ref == 4 || binary.LittleEndian.Uint64(m[i:]) == 0) {
			return fmt.Errorf("reference %d is null", i/ref)
		}
	}
	return nil
}

// readMem reads n bytes at addr of pid through /proc/PID/mem.
func readMem(pid int, addr, n uint64) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(addr)); err != nil {
		return nil, fmt.Errorf("read %#x+%d: %w", addr, n, err)
	}
	return b, nil
}

// ---- the hook's reports, through the agent's own frame decoder

// recorder keeps every event of every session, and the registry they imply.
type recorder struct {
	mu     sync.Mutex
	events []hooksrv.Event
	live   map[uint64]hooksrv.Event // by hook id: the latest REGISTER/MOVE
}

func (r *recorder) HandleEvent(_ context.Context, ev hooksrv.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	switch ev.Kind {
	case hooksrv.EventRegister, hooksrv.EventMove:
		r.live[ev.Block.HookID] = ev
	case hooksrv.EventFree:
		delete(r.live, ev.Block.HookID)
	case hooksrv.EventSessionEnd:
		r.live = map[uint64]hooksrv.Event{}
	}
}

// startHookServer listens on a fresh socket with the agent's hook server.
func startHookServer(t *testing.T) (*recorder, *hooksrv.Server) {
	t.Helper()
	rec := &recorder{live: map[uint64]hooksrv.Event{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := hooksrv.Listen(hooksrv.Config{Path: filepath.Join(t.TempDir(), "hook.sock")}, rec, log)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Serve(ctx)
	t.Cleanup(func() {
		cancel()
		srv.Close()
	})
	return rec, srv
}

// blocks returns the live ranges of the Spark block named name, by chunk.
func (r *recorder) blocks(name string) []hooksrv.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hooksrv.Event
	for _, ev := range r.live {
		if ev.Block.Name == name {
			out = append(out, ev)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Block.Chunk < out[j].Block.Chunk })
	return out
}

// all returns a copy of the events so far.
func (r *recorder) all() []hooksrv.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hooksrv.Event(nil), r.events...)
}

// freeFramePeriod is how long the tests give a frame to arrive.
const settle = 2 * time.Second

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
