package tracer

import (
	"errors"
	"testing"
)

func TestSelectWalkEvents(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cpu              CPUModel
		arch             string
		load, store      uint64 // walk-cycle configs, 0 = none
		walks, pebsLoads uint64
	}{
		{"haswell", CPUModel{"GenuineIntel", 6, 0x3c}, "haswell/broadwell", 0x1008, 0x1049, 0, 0x11d0},
		{"broadwell-x", CPUModel{"GenuineIntel", 6, 0x4f}, "haswell/broadwell", 0x1008, 0x1049, 0, 0x11d0},
		{"skylake", CPUModel{"GenuineIntel", 6, 0x5e}, "skylake/icelake", 0x01001008, 0x01001049, 0, 0x11d0},
		{"cascade lake", CPUModel{"GenuineIntel", 6, 0x55}, "skylake/icelake", 0x01001008, 0x01001049, 0, 0x11d0},
		{"ice lake-x", CPUModel{"GenuineIntel", 6, 0x6a}, "skylake/icelake", 0x01001008, 0x01001049, 0, 0x11d0},
		{"sapphire rapids", CPUModel{"GenuineIntel", 6, 0x8f}, "golden cove", 0x01001012, 0x01001013, 0, 0x11d0},
		{"alder lake", CPUModel{"GenuineIntel", 6, 0x97}, "golden cove", 0x01001012, 0x01001013, 0, 0x11d0},
		{"zen2 rome", CPUModel{"AuthenticAMD", 0x17, 0x31}, "zen1-3", 0, 0, 0x0346, 0},
		{"zen3 milan (this VM)", CPUModel{"AuthenticAMD", 0x19, 0x01}, "zen1-3", 0, 0, 0x0346, 0},
		{"zen4 genoa", CPUModel{"AuthenticAMD", 0x19, 0x11}, "zen4+", 0, 0, 0xf045, 0},
		{"zen5", CPUModel{"AuthenticAMD", 0x1a, 0x02}, "zen4+", 0, 0, 0xf045, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := SelectWalkEvents(tc.cpu)
			if err != nil {
				t.Fatal(err)
			}
			cfg := func(e *RawEvent) uint64 {
				if e == nil {
					return 0
				}
				return e.Config
			}
			if w.Arch != tc.arch || cfg(w.LoadWalk) != tc.load || cfg(w.StoreWalk) != tc.store ||
				cfg(w.Walks) != tc.walks || cfg(w.SampleLoads) != tc.pebsLoads {
				t.Errorf("got %s load %#x store %#x walks %#x pebs %#x", w.Arch,
					cfg(w.LoadWalk), cfg(w.StoreWalk), cfg(w.Walks), cfg(w.SampleLoads))
			}
		})
	}
	for _, m := range []CPUModel{{"GenuineIntel", 6, 0x1c}, {"GenuineIntel", 15, 4}, {"HygonGenuine", 0x18, 0}, {}} {
		if _, err := SelectWalkEvents(m); !errors.Is(err, ErrUnknownCPU) {
			t.Errorf("%+v: %v, want ErrUnknownCPU", m, err)
		}
	}
}

func TestDetectPMU(t *testing.T) {
	for _, tc := range []struct {
		tree   string
		core   []PMU
		ibs    bool
		status string
	}{
		{"testdata/sysfs-vm", nil, false, "unavailable: no hardware PMU"},
		{"testdata/sysfs-intel", []PMU{{"cpu", 4}}, false, "available"},
		{"testdata/sysfs-hybrid", []PMU{{"cpu_core", 4}, {"cpu_atom", 10}}, false, "available"},
		{"testdata/sysfs-amd", []PMU{{"cpu", 4}}, true, "available"},
		{"testdata/missing", nil, false, "unavailable: no hardware PMU"},
	} {
		t.Run(tc.tree, func(t *testing.T) {
			info, err := DetectPMU(tc.tree)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Core) != len(tc.core) || (info.IBSOp != nil) != tc.ibs || info.Status() != tc.status {
				t.Fatalf("got %+v status %q", info, info.Status())
			}
			for i := range tc.core {
				if info.Core[i] != tc.core[i] {
					t.Errorf("core %d: %+v want %+v", i, info.Core[i], tc.core[i])
				}
			}
		})
	}
}

func TestReadCPUModel(t *testing.T) {
	if m, err := ReadCPUModel("testdata"); err == nil {
		t.Fatalf("testdata has no cpuinfo, got %+v", m)
	}
	// This VM's /proc/cpuinfo (AMD EPYC, Zen 3).
	m, err := ReadCPUModel("testdata/proc-vm")
	if err != nil || m != (CPUModel{"AuthenticAMD", 25, 1}) {
		t.Fatalf("proc-vm: %+v %v", m, err)
	}
	got, err := parseCPUInfo([]byte("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"))
	if err != nil || got != (CPUModel{"AuthenticAMD", 25, 1}) {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := parseCPUInfo([]byte("vendor_id: x\n")); err == nil {
		t.Error("incomplete cpuinfo accepted")
	}
	if _, err := parseCPUInfo([]byte("vendor_id: x\ncpu family: six\nmodel: 1\n")); err == nil {
		t.Error("bad family accepted")
	}
}

func FuzzParseCPUInfo(f *testing.F) {
	f.Add([]byte("vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCPUInfo(b)
		if err == nil && m.Vendor == "" && m.Family == 0 && m.Model == 0 && len(b) == 0 {
			t.Fatal("empty input parsed")
		}
	})
}

func TestAttributeWalkCycles(t *testing.T) {
	for _, tc := range []struct {
		cycles, samples, matched, want uint64
		ok                             bool
	}{
		{1000, 100, 25, 250, true},
		{1000, 0, 0, 0, false},
		{1000, 10, 11, 0, false},
		{0, 10, 5, 0, true},
	} {
		got, ok := AttributeWalkCycles(tc.cycles, tc.samples, tc.matched)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v: got %d %v", tc, got, ok)
		}
	}
}

func TestScaleCount(t *testing.T) {
	enc := func(v, en, run uint64) []byte {
		b := make([]byte, 24)
		for i, x := range []uint64{v, en, run} {
			for j := 0; j < 8; j++ {
				b[i*8+j] = byte(x >> (8 * j))
			}
		}
		return b
	}
	if got := scaleCount(enc(100, 10, 10)); got != 100 {
		t.Errorf("unscaled: %d", got)
	}
	if got := scaleCount(enc(100, 20, 10)); got != 200 {
		t.Errorf("half the time: %d", got)
	}
	if got := scaleCount(enc(0, 20, 0)); got != 0 {
		t.Errorf("never ran: %d", got)
	}
}
