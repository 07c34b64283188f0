package perfstat

import (
	"errors"
	"fmt"

	"github.com/stratatrace/strata/agent/procmem"
)

var (
	// ErrNoPMU means no hardware PMU is exposed (VMs, many cloud instances).
	ErrNoPMU = errors.New("unavailable: no hardware PMU")
	// ErrUnknownCPU means no page-walk event table entry fits the CPU model.
	ErrUnknownCPU = errors.New("no page-walk events known for this CPU model")
)

// PMU is one hardware perf event source.
type PMU struct {
	Name string // cpu, cpu_core, cpu_atom, ibs_op
	Type uint32 // perf_event_attr.type for its raw events
}

// PMUInfo says which hardware PMUs the node exposes.
type PMUInfo struct {
	Core  []PMU // cpu, or cpu_core and cpu_atom on hybrid Intel
	IBSOp *PMU  // AMD instruction-based sampling (data addresses)
}

// Available reports whether hardware counting is possible at all.
func (p PMUInfo) Available() bool { return len(p.Core) > 0 }

// Status is the pmu_status string of WorkloadCounters: "available" or
// "unavailable: <reason>".
func (p PMUInfo) Status() string {
	if p.Available() {
		return "available"
	}
	return ErrNoPMU.Error()
}

// BigCore is the core PMU the walk events are encoded for: "cpu", or
// "cpu_core" on hybrid Intel, whose E-cores ("cpu_atom") use other
// encodings. ok is false without a core PMU.
func (p PMUInfo) BigCore() (PMU, bool) {
	if len(p.Core) == 0 {
		return PMU{}, false
	}
	for _, c := range p.Core {
		if c.Name == "cpu" || c.Name == "cpu_core" {
			return c, true
		}
	}
	return p.Core[0], true
}

// DetectPMU picks the hardware PMUs (cpu, cpu_core, cpu_atom, ibs_op) out of
// the event sources of fs's /sys/bus/event_source/devices. A VM without a
// virtual PMU lists only software ones, which gives an empty PMUInfo.
func DetectPMU(fs procmem.FS) (PMUInfo, error) {
	srcs, err := fs.EventSources()
	if err != nil {
		return PMUInfo{}, fmt.Errorf("detect pmu: %w", err)
	}
	return pickPMUs(srcs), nil
}

func pickPMUs(srcs []procmem.EventSource) PMUInfo {
	var info PMUInfo
	for _, name := range []string{"cpu", "cpu_core", "cpu_atom", "ibs_op"} {
		for _, s := range srcs {
			if s.Name != name {
				continue
			}
			p := PMU{Name: s.Name, Type: s.Type}
			if name == "ibs_op" {
				info.IBSOp = &p
			} else {
				info.Core = append(info.Core, p)
			}
		}
	}
	return info
}

// RawEvent is a model-specific event: perf_event_attr.config for the core
// PMU's type (event | umask<<8 | cmask<<24 on Intel and AMD core PMUs).
type RawEvent struct {
	Name   string
	Config uint64
}

// WalkEvents are the page-walk events of one CPU model.
type WalkEvents struct {
	Arch string // the table row that matched
	// LoadWalk and StoreWalk count cycles with a dTLB load / store page walk
	// in progress (Intel WALK_ACTIVE, or WALK_DURATION before Skylake).
	// Both nil on AMD, which has no walk-cycle event.
	LoadWalk, StoreWalk *RawEvent
	// Walks counts completed page walks (AMD): page-walk cycles can only be
	// estimated from it, and must be labelled as an estimate.
	Walks *RawEvent
	// SampleLoads and SampleStores are precise (PEBS) retired loads/stores
	// that missed the STLB, sampled with their data address. AMD samples
	// through the ibs_op PMU instead (both nil).
	SampleLoads, SampleStores *RawEvent
}

func intel(event, umask, cmask uint64) uint64 { return event | umask<<8 | cmask<<24 }

// SelectWalkEvents picks page-walk events for a CPU model, following the
// kernel's perf JSON event tables (tools/perf/pmu-events/arch/x86): the
// walk-cycle events changed code at Golden Cove, and AMD counts walks, not
// cycles (Zen 4 dropped ls_tablewalker).
func SelectWalkEvents(m procmem.CPUModel) (WalkEvents, error) {
	switch m.Vendor {
	case "GenuineIntel":
		if m.Family != 6 {
			break
		}
		pebs := func(w WalkEvents) WalkEvents {
			w.SampleLoads = &RawEvent{"mem_inst_retired.stlb_miss_loads", intel(0xd0, 0x11, 0)}
			w.SampleStores = &RawEvent{"mem_inst_retired.stlb_miss_stores", intel(0xd0, 0x12, 0)}
			return w
		}
		switch m.Model {
		case 0x3c, 0x3f, 0x45, 0x46, // Haswell
			0x3d, 0x47, 0x4f, 0x56: // Broadwell
			return pebs(WalkEvents{Arch: "haswell/broadwell",
				LoadWalk:  &RawEvent{"dtlb_load_misses.walk_duration", intel(0x08, 0x10, 0)},
				StoreWalk: &RawEvent{"dtlb_store_misses.walk_duration", intel(0x49, 0x10, 0)},
			}), nil
		case 0x4e, 0x5e, 0x55, 0x8e, 0x9e, 0xa5, 0xa6, // Skylake, Cascade Lake, Kaby/Coffee/Comet Lake
			0x6a, 0x6c, 0x7d, 0x7e, 0x8c, 0x8d, 0xa7: // Ice Lake(-X), Tiger Lake, Rocket Lake
			return pebs(WalkEvents{Arch: "skylake/icelake",
				LoadWalk:  &RawEvent{"dtlb_load_misses.walk_active", intel(0x08, 0x10, 1)},
				StoreWalk: &RawEvent{"dtlb_store_misses.walk_active", intel(0x49, 0x10, 1)},
			}), nil
		case 0x8f, 0xcf, // Sapphire / Emerald Rapids
			0x97, 0x9a, 0xb7, 0xba, 0xbf: // Alder / Raptor Lake (P-cores)
			return pebs(WalkEvents{Arch: "golden cove",
				LoadWalk:  &RawEvent{"dtlb_load_misses.walk_active", intel(0x12, 0x10, 1)},
				StoreWalk: &RawEvent{"dtlb_store_misses.walk_active", intel(0x13, 0x10, 1)},
			}), nil
		}
	case "AuthenticAMD":
		zen4 := &RawEvent{"ls_l1_d_tlb_miss.all_l2_miss", intel(0x45, 0xf0, 0)}
		switch {
		case m.Family == 0x17, m.Family == 0x19 && (m.Model < 0x10 || m.Model >= 0x20 && m.Model < 0x60):
			return WalkEvents{Arch: "zen1-3",
				Walks: &RawEvent{"ls_tablewalker.dside", intel(0x46, 0x03, 0)}}, nil
		case m.Family == 0x19, m.Family == 0x1a:
			return WalkEvents{Arch: "zen4+", Walks: zen4}, nil
		}
	}
	return WalkEvents{}, fmt.Errorf("select walk events: %s family %#x model %#x: %w", m.Vendor, m.Family, m.Model, ErrUnknownCPU)
}
