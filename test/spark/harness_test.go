package spark

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// The job's record layout: 32-byte stamps "STRATAr%06dp%06do%011d".
const stampLen = 32

// Spark series the tests run, oldest first.
var series = []string{"3.5", "4"}

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
func storage(t *testing.T, s sparkjob.Step, rdd int) (r restRDD, ok bool) {
	t.Helper()
	ok = getJSON(t, fmt.Sprintf("%s/api/v1/applications/%s/storage/rdd/%d", s.UI, s.App, rdd), &r)
	return r, ok
}

// storageUntil polls Spark's view of an RDD until ok accepts it (Spark's
// REST API follows the block manager through its asynchronous listener
// bus) and returns the last view.
func storageUntil(t *testing.T, s sparkjob.Step, rdd int, ok func(r restRDD, listed bool) bool) (restRDD, bool) {
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

func stageInfo(t *testing.T, s sparkjob.Step, id, attempt int) restStage {
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
func startHookServer(t testing.TB) (*recorder, *hooksrv.Server) {
	t.Helper()
	return startHookServerAt(t, filepath.Join(t.TempDir(), "hook.sock"))
}

// startHookServerAt listens on path (an agent restarting on its socket).
func startHookServerAt(t testing.TB, path string) (*recorder, *hooksrv.Server) {
	t.Helper()
	rec := &recorder{live: map[uint64]hooksrv.Event{}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := hooksrv.Listen(hooksrv.Config{Path: path}, rec, log)
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

// agreeWithin is how long a check of the process's memory at the latest
// reported ranges tries again (every 200 ms) before it fails: a collection
// may move the data, and its MOVE or walk comes after.
const agreeWithin = 10 * time.Second

func freePort(t *testing.T) int {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
