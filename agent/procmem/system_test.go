package procmem

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The fixture /proc holds a containerised JVM, pid 4242 (pid 1 in its own
// namespace), with one more thread, 4250.
var fixture = FS{Proc: "testdata/proc", Sys: "testdata/sys2"}

func TestStatusFixture(t *testing.T) {
	for _, tc := range []struct {
		pid  int
		want Status
	}{
		{4242, Status{Tgid: 4242, NSpid: []uint32{4242, 17, 1}}},
		{4250, Status{Tgid: 4242, NSpid: []uint32{4250, 25, 9}}},
	} {
		got, err := fixture.Status(tc.pid)
		if err != nil || got.Tgid != tc.want.Tgid || !slices.Equal(got.NSpid, tc.want.NSpid) {
			t.Errorf("Status(%d) = %+v, %v; want %+v", tc.pid, got, err, tc.want)
		}
	}
	if _, err := fixture.Status(99); !errors.Is(err, ErrProcessGone) {
		t.Errorf("Status of a missing pid: %v, want ErrProcessGone", err)
	}
	self, err := Default().Status(os.Getpid())
	if err != nil || self.Tgid != uint32(os.Getpid()) {
		t.Errorf("Status(self) = %+v, %v", self, err)
	}
	// The test's own resident set: present, and at most its peak.
	if self.VmRSS == 0 || self.VmHWM < self.VmRSS || self.RssAnon+self.RssFile+self.RssShmem != self.VmRSS {
		t.Errorf("Status(self) memory: rss %d hwm %d anon+file+shmem %d", self.VmRSS, self.VmHWM, self.RssAnon+self.RssFile+self.RssShmem)
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		want  Status
		valid bool
	}{
		{"host", "Name:\tjava\nTgid:\t1234\nNgid:\t0\nPid:\t1240\nNSpid:\t1240\n", Status{Tgid: 1234, NSpid: []uint32{1240}}, true},
		{"container", "Tgid:\t77\nNSpid:\t77\t5\t1\n", Status{Tgid: 77, NSpid: []uint32{77, 5, 1}}, true},
		{"no nspid (old kernel)", "Tgid:\t9\n", Status{Tgid: 9}, true},
		{"no tgid", "Name:\tx\nNSpid:\t1\n", Status{}, false},
		{"bad tgid", "Tgid:\tabc\n", Status{}, false},
		{"bad nspid", "Tgid:\t1\nNSpid:\t1 x\n", Status{}, false},
		{"memory", "Tgid:\t5\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nRssAnon:\t   90000 kB\nRssFile:\t   12000 kB\nRssShmem:\t     400 kB\n",
			Status{Tgid: 5, VmHWM: 204800 << 10, VmRSS: 102400 << 10, RssAnon: 90000 << 10, RssFile: 12000 << 10, RssShmem: 400 << 10}, true},
		{"memory without unit", "Tgid:\t5\nVmRSS:\t1024\n", Status{}, false},
		{"memory overflows", "Tgid:\t5\nVmRSS:\t18014398509481984 kB\n", Status{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tc.in))
			if (err == nil) != tc.valid {
				t.Fatalf("error = %v, want valid %v", err, tc.valid)
			}
			if err != nil && !errors.Is(err, ErrBadStatus) {
				t.Errorf("error %v is not ErrBadStatus", err)
			}
			if got.Tgid != tc.want.Tgid || !slices.Equal(got.NSpid, tc.want.NSpid) || got.VmRSS != tc.want.VmRSS ||
				got.VmHWM != tc.want.VmHWM || got.RssAnon != tc.want.RssAnon || got.RssFile != tc.want.RssFile || got.RssShmem != tc.want.RssShmem {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("Tgid:\t77\nNSpid:\t77\t5\t1\n"))
	f.Add([]byte("Tgid:\t4294967296\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStatus(b)
		if err == nil && !bytes.Contains(b, []byte("Tgid:")) {
			t.Fatalf("status without a Tgid line parsed: %+v", st)
		}
	})
}

func TestTasksFixture(t *testing.T) {
	got, err := fixture.Tasks(4242)
	if err != nil || !slices.Equal(got, []int{4242, 4250}) {
		t.Fatalf("Tasks(4242) = %v, %v", got, err)
	}
	// The fixture root is honoured: the running process is not in it.
	if _, err := fixture.Tasks(os.Getpid()); !errors.Is(err, ErrProcessGone) {
		t.Fatalf("Tasks(self) under the fixture: %v, want ErrProcessGone", err)
	}
	self, err := Default().Tasks(os.Getpid())
	if err != nil || !slices.Contains(self, os.Getpid()) {
		t.Fatalf("Tasks(self) = %v, %v", self, err)
	}
}

func TestCPUModel(t *testing.T) {
	// This VM's /proc/cpuinfo (AMD EPYC, Zen 3).
	m, err := fixture.CPUModel()
	if err != nil || m != (CPUModel{"AuthenticAMD", 25, 1}) {
		t.Fatalf("fixture: %+v %v", m, err)
	}
	if _, err := (FS{Proc: t.TempDir()}).CPUModel(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no cpuinfo: %v", err)
	}
	for _, tc := range []struct {
		in   string
		want CPUModel
		ok   bool
	}{
		{"processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Xeon\n" +
			"processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n", CPUModel{"GenuineIntel", 6, 85}, true},
		{"vendor_id: x\n", CPUModel{}, false},
		{"vendor_id: x\ncpu family: six\nmodel: 1\n", CPUModel{}, false},
		{"processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n", CPUModel{}, false}, // arm64
	} {
		got, err := parseCPUInfo([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseCPUInfo(%q) = %+v, %v", tc.in, got, err)
		}
		if err != nil && !errors.Is(err, ErrBadCPUInfo) {
			t.Errorf("parseCPUInfo(%q): %v is not ErrBadCPUInfo", tc.in, err)
		}
	}
}

func FuzzParseCPUInfo(f *testing.F) {
	f.Add([]byte("vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCPUInfo(b)
		if err == nil && !bytes.Contains(b, []byte("vendor_id")) {
			t.Fatalf("cpuinfo without vendor_id parsed: %+v", m)
		}
	})
}

func TestMemTotal(t *testing.T) {
	got, err := fixture.MemTotal()
	if err != nil || got != 24608732<<10 {
		t.Fatalf("fixture MemTotal = %d, %v", got, err)
	}
	for _, in := range []string{"", "MemFree: 1 kB\n", "MemTotal: 12 MB\n", "MemTotal: x kB\n", "MemTotal: 99999999999999999999 kB\n"} {
		if n, err := parseMemTotal([]byte(in)); !errors.Is(err, ErrBadMemInfo) {
			t.Errorf("parseMemTotal(%q) = %d, %v; want ErrBadMemInfo", in, n, err)
		}
	}
	live, err := Default().MemTotal()
	if err != nil || live < 1<<20 {
		t.Fatalf("this node's MemTotal = %d, %v", live, err)
	}
}

func FuzzParseMemTotal(f *testing.F) {
	f.Add([]byte("MemTotal:       24608732 kB\nMemFree: 1 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseMemTotal(b)
		if err == nil && (n%1024 != 0 || !bytes.Contains(b, []byte("MemTotal:"))) {
			t.Fatalf("parsed %d from %q", n, b)
		}
	})
}

func TestBootID(t *testing.T) {
	id, err := fixture.BootID()
	if err != nil || id != "0b4bb1b5-7d0a-4c43-9a2c-6f1e5d2a9c11" {
		t.Fatalf("fixture boot id = %q, %v", id, err)
	}
	if _, err := (FS{Proc: t.TempDir()}).BootID(); err == nil {
		t.Fatal("missing boot id read")
	}
}

func TestMemoryNodes(t *testing.T) {
	if n, err := fixture.MemoryNodes(); err != nil || n != 3 {
		t.Fatalf("fixture: %d nodes, %v; want 3 (0-1,3)", n, err)
	}
	// Without has_memory (kernels before N_MEMORY files), online counts.
	root := writeTree(t, map[string][]byte{"devices/system/node/online": []byte("0-1\n")})
	if n, err := (FS{Sys: root}).MemoryNodes(); err != nil || n != 2 {
		t.Fatalf("online only: %d, %v; want 2", n, err)
	}
	root = writeTree(t, map[string][]byte{"devices/system/node/has_memory": []byte("0-x\n")})
	if _, err := (FS{Sys: root}).MemoryNodes(); !errors.Is(err, ErrBadCPUList) {
		t.Fatalf("bad list: %v", err)
	}
	if _, err := (FS{Sys: t.TempDir()}).MemoryNodes(); !errors.Is(err, ErrNoNodeInfo) {
		t.Fatalf("no node directory: %v, want ErrNoNodeInfo", err)
	}
	if n, err := Default().MemoryNodes(); err != nil || n < 1 {
		t.Fatalf("this node: %d, %v", n, err)
	}
}

func TestEventSources(t *testing.T) {
	got, err := fixture.EventSources()
	want := []EventSource{{"cpu", 4}, {"ibs_op", 11}, {"software", 1}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("fixture: %v, %v; want %v", got, err, want)
	}
	if got, err := (FS{Sys: t.TempDir()}).EventSources(); err != nil || got != nil {
		t.Fatalf("no event_source directory: %v, %v", got, err)
	}
	root := writeTree(t, map[string][]byte{"bus/event_source/devices/cpu/type": []byte("four\n")})
	if _, err := (FS{Sys: root}).EventSources(); err == nil {
		t.Fatal("malformed type accepted")
	}
	live, err := Default().EventSources()
	if err != nil || !slices.Contains(live, EventSource{"software", 1}) {
		t.Fatalf("this node: %v, %v (PERF_TYPE_SOFTWARE is 1)", live, err)
	}
}

func writeTree(t *testing.T, files map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	for name, b := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
