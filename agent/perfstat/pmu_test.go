package perfstat

import (
	"errors"
	"testing"

	"github.com/stratatrace/strata/agent/procmem"
)

func TestSelectWalkEvents(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cpu              procmem.CPUModel
		arch             string
		load, store      uint64 // walk-cycle configs, 0 = none
		walks, pebsLoads uint64
	}{
		{"haswell", cpu("GenuineIntel", 6, 0x3c), "haswell/broadwell", 0x1008, 0x1049, 0, 0x11d0},
		{"broadwell-x", cpu("GenuineIntel", 6, 0x4f), "haswell/broadwell", 0x1008, 0x1049, 0, 0x11d0},
		{"skylake", cpu("GenuineIntel", 6, 0x5e), "skylake/icelake", 0x01001008, 0x01001049, 0, 0x11d0},
		{"cascade lake", cpu("GenuineIntel", 6, 0x55), "skylake/icelake", 0x01001008, 0x01001049, 0, 0x11d0},
		{"ice lake-x", cpu("GenuineIntel", 6, 0x6a), "skylake/icelake", 0x01001008, 0x01001049, 0, 0x11d0},
		{"sapphire rapids", cpu("GenuineIntel", 6, 0x8f), "golden cove", 0x01001012, 0x01001013, 0, 0x11d0},
		{"alder lake", cpu("GenuineIntel", 6, 0x97), "golden cove", 0x01001012, 0x01001013, 0, 0x11d0},
		{"zen2 rome", cpu("AuthenticAMD", 0x17, 0x31), "zen1-3", 0, 0, 0x0346, 0},
		{"zen3 milan (this VM)", cpu("AuthenticAMD", 0x19, 0x01), "zen1-3", 0, 0, 0x0346, 0},
		{"zen4 genoa", cpu("AuthenticAMD", 0x19, 0x11), "zen4+", 0, 0, 0xf045, 0},
		{"zen5", cpu("AuthenticAMD", 0x1a, 0x02), "zen4+", 0, 0, 0xf045, 0},
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
	for _, m := range []procmem.CPUModel{cpu("GenuineIntel", 6, 0x1c), cpu("GenuineIntel", 15, 4), cpu("HygonGenuine", 0x18, 0), {}} {
		if _, err := SelectWalkEvents(m); !errors.Is(err, ErrUnknownCPU) {
			t.Errorf("%+v: %v, want ErrUnknownCPU", m, err)
		}
	}
}

func TestDetectPMU(t *testing.T) {
	for _, tc := range []struct {
		tree   string
		core   []PMU
		big    string
		ibs    bool
		status string
	}{
		{"testdata/sys-vm", nil, "", false, "unavailable: no hardware PMU"}, // software and tracepoint only
		{"testdata/sys-intel", []PMU{{"cpu", 4}}, "cpu", false, "available"},
		{"testdata/sys-hybrid", []PMU{{"cpu_core", 4}, {"cpu_atom", 10}}, "cpu_core", false, "available"},
		{"testdata/sys-amd", []PMU{{"cpu", 4}}, "cpu", true, "available"},
		{"testdata/missing", nil, "", false, "unavailable: no hardware PMU"},
	} {
		t.Run(tc.tree, func(t *testing.T) {
			info, err := DetectPMU(procmem.FS{Sys: tc.tree})
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
			if big, ok := info.BigCore(); big.Name != tc.big || ok != (tc.big != "") {
				t.Errorf("big core %+v %v, want %q", big, ok, tc.big)
			}
		})
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
	for _, tc := range []struct {
		name            string
		v, enabled, run uint64
		want            uint64
	}{
		{"unscaled", 100, 10, 10, 100},
		{"half the time", 100, 20, 10, 200},
		{"never ran", 0, 20, 0, 0},
	} {
		if got := scaleCount(enc(tc.v, tc.enabled, tc.run)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func cpu(vendor string, family, model int) procmem.CPUModel {
	return procmem.CPUModel{Vendor: vendor, Family: family, Model: model}
}
