package tracer

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// Counters are one block's fault counts since it was registered.
type Counters struct {
	Read, Write, Exec uint64
	Unclassified      uint64 // faults seen by the perf fallback hook
	Major             uint64
	WalkSamples       uint64 // SampleWalks samples whose data address hit the block
}

// BlockSnapshot is one registered block and its counters.
type BlockSnapshot struct {
	TGID       uint32
	BlockID    uint64
	Start, End uint64
	Counters
}

// ExitReport is what a traced process left behind when it exited: its
// blocks' final counters and, when SampleWalks runs, its walk samples (as
// WalkSampleCounts would have said).
type ExitReport struct {
	TGID                            uint32
	Blocks                          []BlockSnapshot
	WalkSamples, WalkSamplesMatched uint64
}

// Stats are the tracer's own counters since Load.
type Stats struct {
	Hook          Hook   // the fault hook in use
	TracedFaults  uint64 // faults of traced processes
	MatchedFaults uint64 // ... inside a registered block
	MajorFaults   uint64 // matched major faults
	WalkSamples   uint64 // matched walk samples
	Exits         uint64 // traced processes the kernel saw exit
	KernelEvents  uint64 // records submitted to the ring
	KernelDrops   uint64 // ring reserve failures (ring full)
	Delivered     uint64 // events handed to the Events channel
	UserDrops     uint64 // events dropped because the channel was full
	BadRecords    uint64 // undecodable ring records
	Blocks        int    // blocks registered now
	WeakRanges    int    // their weak ranges now (SetWeakRanges), as listed after giving way
	RangeSets     int    // address-index cells in the kernel now
	RunEntries    int    // entries of the runs array in use (dense granules)
	PerfEvents    int    // per-CPU perf events open now (perf hook, major faults, walks)

	// Fills (AttachFills): puts marked begun; those that stored their
	// block; those that did not (the put failed); those nested too deep to
	// count; stored fills a later put of the same block overwrote before a
	// claim; fills lost for want of room; ends without a begin (probes
	// attached mid-put); fills taken by TakeFill; and fills dropped
	// unclaimed (their process ended, or fillMaxAge passed).
	FillsBegun, FillsStored, FillsFailed, FillsTooDeep uint64
	FillsReplaced, FillsLost, FillsUnmatched           uint64
	FillsClaimed, FillsUnclaimed                       uint64
	FillFiles                                          int // files the fill probes are attached to
}

// Tracer owns every kernel handle of the fault tracer. Its methods are safe
// for concurrent use.
type Tracer struct {
	cfg       Config
	log       *slog.Logger
	spec      *ebpf.CollectionSpec
	maps      map[string]*ebpf.Map
	ncpu      int
	hook      Hook
	fault     *ebpf.Program      // the fault program in use (tests run it)
	walk      *ebpf.Program      // loaded by the first SampleWalks
	fillBegin *ebpf.Program      // loaded by the first AttachFills
	fillEnd   *ebpf.Program      // ... with fillBegin
	faultLink *toggleLink        // nil for the perf hook
	pidMem    []byte             // mmap of pid_bits
	grace     *ebpf.Map          // a map-in-map whose update waits for an RCU grace period
	runs      *runPool           // segments of the runs map (guarded by mu)
	runsMem   []strataBlockRange // mmap of the runs map

	cpuEvents     []*cpuEvents // per-CPU perf events (guarded by mu after Load)
	cpuListFailed bool         // the online CPU list could not be read (logged once)

	closers []io.Closer // in opening order; Close runs them in reverse
	reader  *ringbuf.Reader
	events  chan Event
	wg      sync.WaitGroup
	monoOff atomic.Int64 // wall - monotonic, ns

	delivered, userDrops, badRecords atomic.Uint64

	mu        sync.Mutex
	closed    bool
	procs     map[uint32]*proc
	freeSlots []uint32
	nextSlot  uint32

	fillFiles                    map[fillFile]bool // files the fill probes are attached to
	fillsClaimed, fillsUnclaimed uint64
}

type proc struct {
	idx   *procIndex
	pidfd int
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func fdCloser(fd int) io.Closer { return closerFunc(func() error { return unix.Close(fd) }) }

// Load creates the maps, loads and attaches the programs and starts the
// ring reader. On failure it closes whatever it opened.
func Load(cfg Config) (_ *Tracer, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	if err := features.HaveMapType(ebpf.RingBuf); err != nil {
		return nil, fmt.Errorf("probe ringbuf: %w: %w", ErrUnsupported, err)
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("count cpus: %w", err)
	}
	spec, err := loadStrata()
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	every := cfg.SampleEvery
	if cfg.DisableEvents {
		every = 0
	}
	if err := spec.Variables[strataVarSampleEvery].Set(every); err != nil {
		return nil, fmt.Errorf("set sample_every: %w", err)
	}
	if err := spec.Variables[strataVarWakeBytes].Set(uint64(cfg.RingBytes / 4)); err != nil {
		return nil, fmt.Errorf("set wake_bytes: %w", err)
	}
	spec.Maps[strataMapCounters].MaxEntries = cfg.MaxBlocks
	spec.Maps[strataMapCells].MaxEntries = cfg.MaxRangeSets
	spec.Maps[strataMapRuns].MaxEntries = cfg.MaxRunEntries
	spec.Maps[strataMapEvents].MaxEntries = cfg.RingBytes
	spec.Maps[strataMapFillsDone].MaxEntries = cfg.MaxFills

	t := &Tracer{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "tracer"),
		spec:   spec,
		maps:   map[string]*ebpf.Map{},
		ncpu:   ncpu,
		events: make(chan Event, cfg.EventBuffer),
		procs:  map[uint32]*proc{},

		fillFiles: map[fillFile]bool{},
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	for _, name := range []string{strataMapPidBits, strataMapCells, strataMapRuns, strataMapCounters,
		strataMapTgids, strataMapStats, strataMapEvents, strataMapFills, strataMapFillsDone} {
		m, err := ebpf.NewMap(spec.Maps[name])
		if err != nil {
			return nil, fmt.Errorf("create map %s: %w", name, err)
		}
		t.maps[name] = m
		t.closers = append(t.closers, m)
	}
	mem, err := unix.Mmap(t.maps[strataMapPidBits].FD(), 0, pidWords*8,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap pid_bits: %w", err)
	}
	t.pidMem = mem
	t.closers = append(t.closers, closerFunc(func() error { return unix.Munmap(mem) }))
	runSize := int(cfg.MaxRunEntries) * int(unsafe.Sizeof(strataBlockRange{}))
	rmem, err := unix.Mmap(t.maps[strataMapRuns].FD(), 0, runSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap runs: %w", err)
	}
	t.runsMem = unsafe.Slice((*strataBlockRange)(unsafe.Pointer(&rmem[0])), cfg.MaxRunEntries)
	t.closers = append(t.closers, closerFunc(func() error { return unix.Munmap(rmem) }))
	if err := t.makeGrace(); err != nil {
		return nil, err
	}
	t.runs = newRunPool(cfg.MaxRunEntries, t.waitGrace)

	if err := t.attachFaultHook(); err != nil {
		return nil, err
	}
	if err := t.attachExitHook(); err != nil {
		return nil, err
	}
	if !cfg.NoMajorFaults {
		if err := t.attachMajorFaults(); err != nil {
			return nil, err
		}
	}

	rd, err := ringbuf.NewReader(t.maps[strataMapEvents])
	if err != nil {
		return nil, fmt.Errorf("open ring reader: %w", err)
	}
	t.reader = rd
	if err := t.syncClock(); err != nil {
		return nil, err
	}
	if !cfg.manualDrain {
		t.startReader()
	}
	t.log.Info("tracer loaded", "hook", t.hook, "sample_every", every,
		"max_blocks", cfg.MaxBlocks, "ring_bytes", cfg.RingBytes, "cpus", ncpu)
	return t, nil
}

// makeGrace creates the map-in-map that waitGrace updates: the kernel
// waits for an RCU grace period after every update of a map-in-map from
// user space, so that the caller knows no BPF program still uses the old
// inner map. Strata's programs are not sleepable and run under RCU.
func (t *Tracer) makeGrace() error {
	inner := &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "strata_grace", Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4,
		MaxEntries: 1, InnerMap: inner})
	if err != nil {
		return fmt.Errorf("create grace map: %w", err)
	}
	t.closers = append(t.closers, m)
	in, err := ebpf.NewMap(inner)
	if err != nil {
		return fmt.Errorf("create grace map: %w", err)
	}
	defer in.Close() // the outer map holds it
	if err := m.Put(uint32(0), in); err != nil {
		return fmt.Errorf("create grace map: %w", err)
	}
	t.grace = m
	return nil
}

// waitGrace returns once every BPF program run that started before the call
// has ended.
func (t *Tracer) waitGrace() error {
	var id ebpf.MapID
	if err := t.grace.Lookup(uint32(0), &id); err != nil {
		return fmt.Errorf("wait for grace period: %w", err)
	}
	in, err := ebpf.NewMapFromID(id)
	if err != nil {
		return fmt.Errorf("wait for grace period: %w", err)
	}
	defer in.Close()
	if err := t.grace.Put(uint32(0), in); err != nil {
		return fmt.Errorf("wait for grace period: %w", err)
	}
	return nil
}

// reclaimRuns frees the run segments released so far, after a grace period
// waited for without holding the lock.
func (t *Tracer) reclaimRuns() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	segs := t.runs.takeLimbo()
	t.mu.Unlock()
	if len(segs) == 0 {
		return
	}
	err := t.waitGrace()
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.runs.limbo = append(t.runs.limbo, segs...)
		t.log.Warn("reclaim index runs", "error", err)
		return
	}
	t.runs.freeSegs(segs)
}

func (t *Tracer) startReader() {
	t.wg.Add(1)
	go t.readLoop()
}

// loadProgram loads one program of the spec against the tracer's maps and
// logs the verifier's output when it is rejected.
func (t *Tracer) loadProgram(name string) (*ebpf.Program, error) {
	one := t.spec.Copy()
	for n := range one.Programs {
		if n != name {
			delete(one.Programs, n)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{MapReplacements: t.maps})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.log.Error("verifier rejected program", "program", name, "log", fmt.Sprintf("%+v", ve))
		}
		return nil, fmt.Errorf("load program %s: %w", name, err)
	}
	defer coll.Close()
	prog := coll.DetachProgram(name)
	t.closers = append(t.closers, prog)
	return prog, nil
}

func (t *Tracer) attachFaultHook() error {
	hooks := []Hook{HookBTF, HookRaw, HookPerf}
	if t.cfg.Hook != HookAuto {
		hooks = []Hook{t.cfg.Hook}
	}
	var errs []error
	for _, h := range hooks {
		err := t.attachFault(h)
		if err == nil {
			t.hook = h
			return nil
		}
		t.log.Warn("fault hook unavailable", "hook", h, "error", err)
		errs = append(errs, err)
	}
	return fmt.Errorf("attach fault hook: %w", errors.Join(errs...))
}

func (t *Tracer) attachFault(h Hook) error {
	switch h {
	case HookBTF:
		// No features probe here: features.HaveProgramType(ebpf.Tracing)
		// loads an fentry program, which kernels that block trampolines
		// refuse (EPERM) although tp_btf loads fine. Try-load.
		prog, err := t.loadProgram(strataProgFaultBtf)
		if err != nil {
			return err
		}
		t.fault = prog
		return t.attachToggle(func() (link.Link, error) {
			l, err := link.AttachTracing(link.TracingOptions{Program: prog})
			if err != nil {
				return nil, fmt.Errorf("attach tp_btf/page_fault_user: %w", err)
			}
			return l, nil
		})
	case HookRaw:
		if err := features.HaveProgramType(ebpf.RawTracepoint); err != nil {
			return fmt.Errorf("probe raw tracepoints: %w", err)
		}
		prog, err := t.loadProgram(strataProgFaultRaw)
		if err != nil {
			return err
		}
		t.fault = prog
		return t.attachToggle(func() (link.Link, error) {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "page_fault_user", Program: prog})
			if err != nil {
				return nil, fmt.Errorf("attach raw_tp/page_fault_user: %w", err)
			}
			return l, nil
		})
	case HookPerf:
		if err := features.HaveProgramType(ebpf.PerfEvent); err != nil {
			return fmt.Errorf("probe perf_event programs: %w", err)
		}
		prog, err := t.loadProgram(strataProgFaultPerf)
		if err != nil {
			return err
		}
		t.fault = prog
		attr := swSampler(unix.PERF_COUNT_SW_PAGE_FAULTS)
		if err := t.attachPerCPU(prog, &attr, "page-fault event"); err != nil {
			return fmt.Errorf("attach page-fault perf events: %w", err)
		}
	default:
		return fmt.Errorf("attach fault hook %q: %w", h, ErrUnsupported)
	}
	return nil
}

// toggleLink is the fault hook's link, which the overhead benchmark detaches
// and re-attaches between runs; Close detaches it for good.
type toggleLink struct {
	attach func() (link.Link, error)
	l      link.Link
}

func (tl *toggleLink) set(on bool) error {
	switch {
	case on && tl.l == nil:
		l, err := tl.attach()
		if err != nil {
			return err
		}
		tl.l = l
	case !on && tl.l != nil:
		err := tl.l.Close()
		tl.l = nil
		return err
	}
	return nil
}

func (tl *toggleLink) Close() error { return tl.set(false) }

func (t *Tracer) attachToggle(attach func() (link.Link, error)) error {
	tl := &toggleLink{attach: attach}
	if err := tl.set(true); err != nil {
		return err
	}
	t.faultLink = tl
	t.closers = append(t.closers, tl)
	return nil
}

func (t *Tracer) attachExitHook() error {
	// Try-load, as for the fault hook.
	prog, btfErr := t.loadProgram(strataProgExitBtf)
	if btfErr == nil {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err == nil {
			t.closers = append(t.closers, l)
			return nil
		}
		btfErr = err
	}
	t.log.Warn("tp_btf/sched_process_exit unavailable, using raw_tp", "error", btfErr)
	prog, err := t.loadProgram(strataProgExitRaw)
	if err != nil {
		return fmt.Errorf("attach exit hook: %w", errors.Join(btfErr, err))
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_process_exit", Program: prog})
	if err != nil {
		return fmt.Errorf("attach raw_tp/sched_process_exit: %w", err)
	}
	t.closers = append(t.closers, l)
	return nil
}

func (t *Tracer) attachMajorFaults() error {
	prog, err := t.loadProgram(strataProgMajorFault)
	if err != nil {
		return fmt.Errorf("attach major faults: %w", err)
	}
	attr := swSampler(unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ)
	if err := t.attachPerCPU(prog, &attr, "major-fault event"); err != nil {
		return fmt.Errorf("attach major-fault perf events: %w", err)
	}
	return nil
}

// swSampler describes a software event that runs its BPF program on every
// occurrence, with the fault address as the sample address.
func swSampler(config uint64) unix.PerfEventAttr {
	return unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      config,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample:      1, // sample_period
		Sample_type: unix.PERF_SAMPLE_ADDR,
	}
}

// Hook returns the fault hook in use.
func (t *Tracer) Hook() Hook { return t.hook }

// Events returns the sampled fault events and exit notices. The channel is
// closed by Close.
func (t *Tracer) Events() <-chan Event { return t.events }

// Close detaches every program and frees every map, in reverse order of
// creation. It is safe on a nil or half-loaded Tracer and idempotent.
func (t *Tracer) Close() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	var errs []error
	if t.reader != nil {
		errs = append(errs, t.reader.Close())
		t.wg.Wait()
		close(t.events)
	}
	t.mu.Lock()
	for _, p := range t.procs {
		unix.Close(p.pidfd)
	}
	t.procs = nil
	t.mu.Unlock()
	for i := len(t.closers) - 1; i >= 0; i-- {
		if err := t.closers[i].Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	t.closers = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close tracer: %w", err)
	}
	return nil
}
