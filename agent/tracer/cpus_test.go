package tracer

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stratatrace/strata/agent/procmem"
	"golang.org/x/sys/unix"
)

// TestHotplugFollowsOnlineCPUs runs the perf fault hook with a fake sysfs
// whose online list first says CPU 0 only, and a child pinned to CPU 1:
// its faults are not seen until the list says 0-1 and the tracer checks,
// then each is counted once. An event taken off its CPU (disabled, as a CPU
// going offline does to it) is reopened by the check after next; when the
// list drops CPU 1 its event closes.
func TestHotplugFollowsOnlineCPUs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("skipping: needs two CPUs")
	}
	sys := t.TempDir()
	online := func(list string) {
		dir := filepath.Join(sys, "devices", "system", "cpu")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "online"), []byte(list+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	online("0")
	tr := loadTracer(t, Config{Hook: HookPerf, NoMajorFaults: true, DisableEvents: true, manualDrain: true,
		CPUs: procmem.FS{Sys: sys}})
	c := startChild(t, 16)
	if err := tr.Track(c.pid); err != nil {
		t.Fatal(err)
	}
	if err := tr.RegisterBlock(c.pid, 1, c.page(0), c.page(16)); err != nil {
		t.Fatal(err)
	}
	c.do("cpu 1")
	round := func(step string, want uint64) {
		t.Helper()
		before := counters(t, tr, c.pid, 1).Unclassified
		c.do("d")
		c.do("w 0 8")
		if got := counters(t, tr, c.pid, 1).Unclassified - before; got != want {
			t.Errorf("%s: %d faults counted, want %d", step, got, want)
		}
	}
	events := func(step string, want int) {
		t.Helper()
		if st, _ := tr.Stats(); st.PerfEvents != want {
			t.Errorf("%s: %d perf events, want %d", step, st.PerfEvents, want)
		}
	}
	events("CPU 0 online", 1)
	round("CPU 1 not online", 0)

	online("0-1")
	tr.checkCPUs()
	events("CPU 1 came online", 2)
	round("CPU 1 came online", 8)
	c.do("cpu 0")
	round("on CPU 0", 8)
	c.do("cpu 1")

	tr.mu.Lock()
	e := tr.cpuEvents[0].on[1]
	tr.mu.Unlock()
	if err := unix.IoctlSetInt(e.fd, unix.PERF_EVENT_IOC_DISABLE, 0); err != nil {
		t.Fatal(err)
	}
	round("event off CPU 1", 0)
	tr.checkCPUs() // its enabled time moved since it was opened
	tr.checkCPUs() // and stopped since the last check: reopened
	if tr.cpuEvents[0].on[1] == e {
		t.Fatal("stopped event on CPU 1 not reopened")
	}
	round("event on CPU 1 reopened", 8)

	online("0")
	tr.checkCPUs()
	events("CPU 1 went offline", 1)
	round("CPU 1 went offline", 0)
}

// TestHotplugWithoutCPUList: when the online list cannot be read, the
// events go on every possible CPU (offline ones skipped) and stay.
func TestHotplugWithoutCPUList(t *testing.T) {
	tr := loadTracer(t, Config{Hook: HookPerf, DisableEvents: true, manualDrain: true,
		CPUs: procmem.FS{Sys: t.TempDir()}})
	tr.checkCPUs()
	on, err := procmem.Default().OnlineCPUs()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if st, _ := tr.Stats(); st.PerfEvents != 2*len(on) {
		t.Errorf("%d perf events, want 2 (faults, major faults) × %d online CPUs", st.PerfEvents, len(on))
	}
}
