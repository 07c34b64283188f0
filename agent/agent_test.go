package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/agent/perfstat"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/spool"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
	"golang.org/x/sys/unix"
)

// twoNodes is a sysfs whose node directory claims two NUMA nodes with
// memory, one CPU each, as a two-socket machine shows.
const twoNodes = "testdata/sys-2node"

// TestBatchesCarryNodeInfo runs the agent with --sys on the two-node
// fixture and a real workload reporting over the hook socket; every batch
// it spools must describe the node: 2 NUMA nodes, this system's page size
// and its memory as sysinfo(2) counts it.
func TestBatchesCarryNodeInfo(t *testing.T) {
	pid, batches := spoolRun(t, "app-node", func(cfg *config.Config) { cfg.SysRoot = twoNodes })
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	want := &stratav1.NodeInfo{NumaNodes: 2, PageSize: uint32(os.Getpagesize()), MemTotalBytes: uint64(si.Totalram) * uint64(si.Unit)}
	var kinds []stratav1.AccessKind
	for _, b := range batches {
		n := b.GetNode()
		if n.GetNumaNodes() != want.NumaNodes || n.GetPageSize() != want.PageSize || n.GetMemTotalBytes() != want.MemTotalBytes {
			t.Fatalf("batch %d node = %v, want %v", b.GetSeq(), n, want)
		}
		for _, r := range b.GetRecords() {
			if r.GetPid() != uint32(pid) || r.GetBlock().GetAppId() != "app-node" {
				t.Fatalf("record of pid %d app %q, want %d app-node", r.GetPid(), r.GetBlock().GetAppId(), pid)
			}
			kinds = append(kinds, r.GetAccess())
		}
	}
	count := func(k stratav1.AccessKind) int {
		return len(slices.DeleteFunc(slices.Clone(kinds), func(x stratav1.AccessKind) bool { return x != k }))
	}
	if len(batches) == 0 || count(stratav1.AccessKind_ACCESS_KIND_ALLOC) != 3 || count(stratav1.AccessKind_ACCESS_KIND_FREE) != 3 {
		t.Fatalf("%d batches with records %v; want the workload's 3 ALLOC and 3 FREE records", len(batches), kinds)
	}
}

// TestPageFlagsSampled: with --page-flags sampled the blocks' present
// pages carry PFNs and nodes but say FLAGS_NOT_READ (and FLAGS_UNKNOWN)
// with no flags; with the default every present page has its kpageflags.
func TestPageFlagsSampled(t *testing.T) {
	testenv.RequireRoot(t)
	const unknown = uint32(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN | stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ)
	present := uint32(stratav1.PageState_PAGE_STATE_PRESENT)
	for _, mode := range []string{"all", "sampled"} {
		t.Run(mode, func(t *testing.T) {
			_, batches := spoolRun(t, "app-flags", func(cfg *config.Config) { cfg.PageFlags = mode })
			var pages uint32
			for _, b := range batches {
				for _, r := range b.GetRecords() {
					for _, run := range r.GetRuns() {
						if run.GetState()&present == 0 {
							continue
						}
						pages += run.GetCount()
						if run.GetPfn() == 0 {
							t.Fatalf("%s: present run without a PFN: %v", mode, run)
						}
						got := run.GetState() & unknown
						if mode == "sampled" && (got != unknown || run.GetKpageflags() != 0) || mode == "all" && (got != 0 || run.GetKpageflags() == 0) {
							t.Fatalf("%s: run %v", mode, run)
						}
					}
				}
			}
			if pages == 0 {
				t.Fatalf("%s: no present pages spooled", mode)
			}
		})
	}
}

// spoolRun runs the agent with no collector (batches stay in the spool),
// after tweak adjusted its configuration, while the regions workload
// reports its three blocks as app; it returns the workload's pid and the
// spooled batches.
func spoolRun(t *testing.T, app string, tweak func(*config.Config)) (int, []*stratav1.Batch) {
	t.Helper()
	bin := workload.Build(t)
	dir := t.TempDir()
	cfg := config.Default()
	cfg.NodeName = "node-a"
	cfg.Hook.Path = filepath.Join(dir, "hook.sock")
	cfg.Collector = "127.0.0.1:1" // nobody: batches stay in the spool
	cfg.SpoolDir = filepath.Join(dir, "spool")
	cfg.Faults = "off"
	cfg.FlushInterval = 20 * time.Millisecond
	cfg.DrainTimeout = 10 * time.Millisecond
	cfg.StatsInterval = 0
	cfg.HTTPAddr = freeAddr(t)
	cfg.HTTPInsecure = true
	tweak(&cfg)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	ended := &sessionEnds{ch: make(chan struct{}, 1)}
	go func() { runErr <- Run(ctx, cfg, slog.New(ended)) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(cfg.Hook.Path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hook socket not created")
		}
		time.Sleep(5 * time.Millisecond)
	}
	p := workload.Start(t, bin, workload.Options{Socket: cfg.Hook.Path, AppID: app, ExecutorID: "1"})
	// The workload's three blocks, each registered, written and read, are
	// resolved while it lives: wait for their nine records in the spool.
	for deadline := time.Now().Add(10 * time.Second); recordsSpooled(cfg.HTTPAddr) < 9; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the workload's records did not reach the spool")
		}
	}
	if _, err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	select { // the session read every frame; Run's shutdown waits for its end
	case <-ended.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("hook session did not end")
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatalf("run: %v", err)
	}

	sp, err := spool.Open(cfg.SpoolDir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var batches []*stratav1.Batch
	for seq := uint64(0); ; {
		b, err := sp.Next(seq)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			return p.PID, batches
		}
		seq = b.GetSeq()
		batches = append(batches, b)
	}
}

// freeAddr returns a loopback address nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// recordsSpooled reads strata_records_total from the agent's /metrics, 0
// when it cannot.
func recordsSpooled(addr string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "strata_records_total "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// sessionEnds signals the hook server's "session ended" log record.
type sessionEnds struct{ ch chan struct{} }

func (s *sessionEnds) Enabled(context.Context, slog.Level) bool { return true }
func (s *sessionEnds) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "session ended" {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
func (s *sessionEnds) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *sessionEnds) WithGroup(string) slog.Handler      { return s }

// TestFaultsConfigReadsUnderRoots: the fault side reads threads, CPU nodes
// and PMUs under --proc and --sys, not the running system's files.
func TestFaultsConfigReadsUnderRoots(t *testing.T) {
	proc := t.TempDir() // lists no process at all
	cfg := config.Default()
	cfg.ProcRoot, cfg.SysRoot = proc, twoNodes
	fc := faultsConfig(cfg, procmem.FS{Proc: proc, Sys: twoNodes}, slog.New(slog.DiscardHandler))
	if !slices.Equal(fc.CPUNodes, []int32{0, 1}) {
		t.Errorf("cpu nodes %v, want the fixture's [0 1]", fc.CPUNodes)
	}
	if fc.PMU.Available() || fc.Walk != nil {
		t.Errorf("pmu %+v walk %v, want none (the fixture lists no event source)", fc.PMU, fc.Walk)
	}
	_, err := fc.OpenWorkload(uint32(os.Getpid()))
	if !errors.Is(err, procmem.ErrProcessGone) || !strings.Contains(err.Error(), proc) {
		t.Fatalf("workload of a pid absent from --proc: %v, want ErrProcessGone naming %s", err, proc)
	}
}

// TestWorkloadCountersSource: --workload-counters auto counts a hooked
// process from procfs where no PMU is (the fixture lists none), perf asks
// for perf events all the same.
func TestWorkloadCountersSource(t *testing.T) {
	testenv.RequireRoot(t)
	for mode, want := range map[string]perfstat.Software{"auto": perfstat.SoftwareProcfs, "procfs": perfstat.SoftwareProcfs,
		"perf": perfstat.SoftwarePerf} {
		cfg := config.Default()
		cfg.WorkloadCounters = mode
		fc := faultsConfig(cfg, procmem.FS{Proc: "/proc", Sys: twoNodes}, slog.New(slog.DiscardHandler))
		w, err := fc.OpenWorkload(uint32(os.Getpid()))
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if got := w.(*perfstat.Workload).Software(); got != want {
			t.Errorf("--workload-counters %s: source %v, want %v", mode, got, want)
		}
		w.Close()
	}
	cfg := config.Default()
	cfg.WorkloadCounters = "pmu"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "workload counters") {
		t.Errorf("--workload-counters pmu: %v, want refused", err)
	}
}

// TestNodeInfoUnknown: what sysfs and procfs do not say stays zero.
func TestNodeInfoUnknown(t *testing.T) {
	n := nodeInfo(procmem.FS{Proc: t.TempDir(), Sys: t.TempDir()}, slog.New(slog.DiscardHandler))
	if n.GetNumaNodes() != 0 || n.GetMemTotalBytes() != 0 || n.GetPageSize() != uint32(os.Getpagesize()) {
		t.Fatalf("node info %v, want only the page size", n)
	}
}
