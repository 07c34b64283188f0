package agent

import (
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/agent/damon"
	"github.com/stratatrace/strata/agent/faults"
	"github.com/stratatrace/strata/agent/perfstat"
	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/tracer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// openFaults wires the kernel side: the BPF tracer, perf-stat counting of
// every traced process and the NUMA node of each CPU, all read under fs.
// With --faults auto a tracer that cannot load (not root, no BPF) leaves
// the agent running without it; with on it is an error.
func openFaults(cfg config.Config, fs procmem.FS, log *slog.Logger) (*faults.Faults, error) {
	mode := strings.ToLower(cfg.Faults)
	if mode == "off" {
		return faults.Unavailable("disabled (--faults off)"), nil
	}
	load := func(onExit func(tracer.ExitReport)) (faults.Tracer, error) {
		t, err := tracer.Load(tracer.Config{SampleEvery: cfg.SampleEvery, MaxBlocks: cfg.KernelMaxBlocks, Logger: log, OnExit: onExit, CPUs: fs})
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	f, err := faults.Open(load, faultsConfig(cfg, fs, log))
	if err != nil {
		if mode == "on" {
			return nil, err
		}
		log.Warn("page-fault attribution unavailable; continuing without it", "component", "faults", "err", err)
		return faults.Unavailable(err.Error()), nil
	}
	return f, nil
}

// faultsConfig reads what the fault side needs to know of the node.
func faultsConfig(cfg config.Config, fs procmem.FS, log *slog.Logger) faults.Config {
	fc := faults.Config{Interval: cfg.CountersInterval, Logger: log, FS: fs} // Faults adds its component
	// The fill probes attach at start to the hook library wherever the
	// agent installs or ships it, besides where hook-opts looks.
	fc.HookLibraries = faults.DefaultHookLibraries()
	for _, dir := range []string{cfg.HookInstallDir, config.DefaultHookFilesDir} {
		if dir != "" {
			fc.HookLibraries = append(fc.HookLibraries, filepath.Join(dir, faults.HookLibraryName))
		}
	}
	log = log.With("component", "faults")
	var err error
	if fc.CPUNodes, err = fs.LoadCPUNodes(); err != nil {
		log.Warn("CPU to NUMA node map unavailable; faults will not say local or remote", "err", err)
	}
	if fc.PMU, err = perfstat.DetectPMU(fs); err != nil {
		log.Warn("hardware PMU detection failed; counting software events only", "err", err)
	}
	if fc.PMU.Available() {
		m, err := fs.CPUModel()
		if err == nil {
			var we perfstat.WalkEvents
			if we, err = perfstat.SelectWalkEvents(m); err == nil {
				fc.Walk = &we
			}
		}
		if err != nil {
			log.Info("page-walk events unknown for this CPU; no walk cycles", "err", err)
		}
	}
	opts := perfstat.Options{FS: fs, PMU: fc.PMU, Walk: fc.Walk, Software: perfstat.SoftwareProcfs}
	if cfg.WorkloadCounters == "perf" || cfg.WorkloadCounters == "auto" && fc.PMU.Available() {
		opts.Software = perfstat.SoftwarePerf
	}
	log.Info("workload counters", "software", map[perfstat.Software]string{
		perfstat.SoftwarePerf: "perf events", perfstat.SoftwareProcfs: "procfs"}[opts.Software], "pmu", fc.PMU.Status())
	fc.OpenWorkload = func(pid uint32) (faults.Workload, error) {
		w, err := perfstat.Open(pid, opts)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
	return fc
}

// nodeInfo reads the machine description every batch carries. What cannot
// be read stays zero, which the collector takes as unknown.
func nodeInfo(fs procmem.FS, log *slog.Logger) *stratav1.NodeInfo {
	n := &stratav1.NodeInfo{PageSize: uint32(procmem.PageSize())}
	if nodes, err := fs.MemoryNodes(); err != nil {
		log.Warn("NUMA node count unknown; batches will not say it", "err", err)
	} else {
		n.NumaNodes = uint32(nodes)
	}
	if mem, err := fs.MemTotal(); err != nil {
		log.Warn("memory size unknown; batches will not say it", "err", err)
	} else {
		n.MemTotalBytes = mem
	}
	return n
}

// openHeat opens access heat from DAMON under cfg.SysRoot (agent/damon).
func openHeat(cfg config.Config, log *slog.Logger) (*damon.Heat, error) {
	dc := cfg.Damon
	dc.PageSize, dc.Logger = procmem.PageSize(), log
	return damon.Open(damon.Sysfs{Root: cfg.SysRoot}, dc)
}

// liveBlocks lists the annotator's live blocks with their pages, as the
// heat sampler takes them.
func liveBlocks(ann *annotator.Annotator) func() []damon.Block {
	return func() []damon.Block {
		live := ann.LiveRuns()
		out := make([]damon.Block, len(live))
		for i, b := range live {
			out[i] = damon.Block(b)
		}
		return out
	}
}
