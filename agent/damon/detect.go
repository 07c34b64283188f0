package damon

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Mode is how the agent gets DAMON's monitoring on this node.
type Mode int

const (
	// Unavailable: no DAMON, or none the agent may use; no heat.
	Unavailable Mode = iota
	// Own: the agent runs a kdamond of its own over the live blocks.
	Own
	// Shared: the agent reads the regions of a kdamond something else
	// runs, without changing any of its inputs.
	Shared
	// OwnVaddr: the agent runs a kdamond of its own over the live blocks'
	// virtual ranges, one target per hooked process.
	OwnVaddr
)

func (m Mode) String() string {
	switch m {
	case Own:
		return "own"
	case Shared:
		return "shared"
	case OwnVaddr:
		return "own-vaddr"
	}
	return "unavailable"
}

// Range is [Start, End) of memory, in bytes: physical, or virtual in one
// process's address space.
type Range struct{ Start, End uint64 }

// Region is one region DAMON reports: its range, in how many sampling
// intervals of an aggregation interval it was seen accessed, and its age,
// the aggregation intervals its access pattern has held.
type Region struct {
	Range
	NrAccesses uint64
	Age        uint64
}

// Pattern is a scheme's access pattern: the region sizes, nr_accesses and
// ages (in aggregation intervals) of the regions it applies to.
type Pattern struct {
	SzMin, SzMax, NrMin, NrMax, AgeMin, AgeMax uint64
}

// Scheme is one DAMOS scheme of a context.
type Scheme struct {
	Index   int
	Action  string
	Pattern Pattern
	// Filters counts core filters (filters and core_filters), which drop
	// whole regions before the scheme tries them; Quota says a time or
	// size quota bounds what it tries.
	Filters int
	Quota   bool
}

// Context is one monitoring context of a kdamond.
type Context struct {
	Kdamond, Index int
	Ops            string // operations: paddr, vaddr, fvaddr
	AddrUnit       uint64 // bytes per address unit (addr_unit, 1 where absent)
	Sample, Aggr   time.Duration
	Update         time.Duration
	// Tuned: intervals_goal is set, so the kernel tunes the intervals and
	// the files hold only their starting values.
	Tuned bool
	// Ranges are its targets' regions in bytes, sorted and merged; nil
	// when they list none.
	Ranges  []Range
	Schemes []Scheme
}

// Kdamond is one kdamond directory.
type Kdamond struct {
	Index    int
	On       bool
	PID      int
	Contexts []Context
}

// Detection is what Detect found.
type Detection struct {
	Mode Mode
	// Reason says why the mode is unavailable; empty otherwise.
	Reason string
	// Busy says it is unavailable only because DAMON's sysfs lock stayed
	// held (EBUSY) longer than a read waits: another reader or writer's
	// command was running. Looking again later may find a mode.
	Busy     bool
	Kdamonds []Kdamond
}

// maxKdamonds bounds the kdamond directories Detect reads.
const maxKdamonds = 64

// Detect reads DAMON's sysfs interface, changing nothing, and says which
// mode the agent can take: Own when no kdamond directory exists (the agent
// may make one; which operations it gets, and so Own or OwnVaddr, only the
// context it makes can say), Shared when a kdamond that is on has a paddr context with
// a scheme (its tried regions can be read), else Unavailable with the
// reason. A kdamond directory something else made and left off is not
// taken: changing nr_kdamonds makes the kernel rebuild every kdamond
// directory, erasing its configuration.
func (s Sysfs) Detect() Detection {
	unavailable := func(format string, a ...any) Detection {
		d := Detection{Mode: Unavailable, Reason: fmt.Sprintf(format, a...)}
		for _, v := range a {
			if err, ok := v.(error); ok && busy(err) {
				d.Busy = true
			}
		}
		return d
	}
	n, err := s.readUint("kdamonds/nr_kdamonds")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return unavailable("no DAMON sysfs interface (%s)", s.path(""))
	case denied(err):
		return unavailable("not root: DAMON's sysfs files are root's")
	case err != nil:
		return unavailable("%v", err)
	case n == 0:
		return Detection{Mode: Own}
	case n > maxKdamonds:
		return unavailable("nr_kdamonds %d: more kdamonds than the agent reads", n)
	}
	d := Detection{}
	for k := 0; k < int(n); k++ {
		kd, err := s.Kdamond(k)
		if err != nil {
			return unavailable("%v", err)
		}
		d.Kdamonds = append(d.Kdamonds, kd)
	}
	if len(sharedViews(d.Kdamonds)) > 0 {
		d.Mode = Shared
		return d
	}
	var on []string
	for _, kd := range d.Kdamonds {
		if kd.On {
			on = append(on, strconv.Itoa(kd.Index))
		}
	}
	if len(on) > 0 {
		d.Mode, d.Reason = Unavailable, fmt.Sprintf("kdamond %s runs without a paddr context with a scheme: "+
			"nothing to share, and the kernel refuses another kdamond while one runs", strings.Join(on, ", "))
		return d
	}
	d.Mode, d.Reason = Unavailable, fmt.Sprintf("%d kdamond(s) configured by something else, none on: "+
		"adding one would erase their configuration", n)
	return d
}

// Kdamond reads kdamond k's state and configuration.
func (s Sysfs) Kdamond(k int) (Kdamond, error) {
	kd := Kdamond{Index: k}
	dir := kdamondDir(k)
	state, err := s.read(dir + "/state")
	if err != nil {
		return kd, err
	}
	kd.On = state == "on"
	if pid, err := s.read(dir + "/pid"); err == nil {
		kd.PID, _ = strconv.Atoi(pid)
	}
	nc, err := s.readUint(dir + "/contexts/nr_contexts")
	if err != nil {
		return kd, err
	}
	for c := 0; c < int(nc); c++ {
		ctx, err := s.context(k, c)
		if err != nil {
			return kd, err
		}
		kd.Contexts = append(kd.Contexts, ctx)
	}
	return kd, nil
}

// context reads context c of kdamond k.
func (s Sysfs) context(k, c int) (Context, error) {
	ctx := Context{Kdamond: k, Index: c, AddrUnit: 1}
	dir := contextDir(k, c)
	var err error
	if ctx.Ops, err = s.read(dir + "/operations"); err != nil {
		return ctx, err
	}
	if u, err := s.readUint(dir + "/addr_unit"); err == nil && u > 0 {
		ctx.AddrUnit = u
	}
	iv := dir + "/monitoring_attrs/intervals/"
	for _, f := range []struct {
		name string
		d    *time.Duration
	}{{"sample_us", &ctx.Sample}, {"aggr_us", &ctx.Aggr}, {"update_us", &ctx.Update}} {
		us, err := s.readUint(iv + f.name)
		if err != nil {
			return ctx, err
		}
		*f.d = time.Duration(min(us, math.MaxInt64/1000)) * time.Microsecond
	}
	if aggrs, err := s.readUint(iv + "intervals_goal/aggrs"); err == nil && aggrs > 0 {
		ctx.Tuned = true
	}
	nt, err := s.readUint(dir + "/targets/nr_targets")
	if err != nil {
		return ctx, err
	}
	for t := 0; t < int(nt); t++ {
		rd := fmt.Sprintf("%s/targets/%d/regions", dir, t)
		nr, err := s.readUint(rd + "/nr_regions")
		if err != nil {
			return ctx, err
		}
		for r := 0; r < int(nr); r++ {
			start, err1 := s.readUint(fmt.Sprintf("%s/%d/start", rd, r))
			end, err2 := s.readUint(fmt.Sprintf("%s/%d/end", rd, r))
			if err := errors.Join(err1, err2); err != nil {
				return ctx, err
			}
			if end > start && end <= math.MaxUint64/ctx.AddrUnit {
				ctx.Ranges = append(ctx.Ranges, Range{start * ctx.AddrUnit, end * ctx.AddrUnit})
			}
		}
	}
	ctx.Ranges = mergeRanges(ctx.Ranges)
	ns, err := s.readUint(dir + "/schemes/nr_schemes")
	if err != nil {
		return ctx, err
	}
	for i := 0; i < int(ns); i++ {
		sc, err := s.scheme(dir, i)
		if err != nil {
			return ctx, err
		}
		ctx.Schemes = append(ctx.Schemes, sc)
	}
	return ctx, nil
}

// scheme reads scheme i of the context in dir.
func (s Sysfs) scheme(dir string, i int) (Scheme, error) {
	sc := Scheme{Index: i}
	sd := fmt.Sprintf("%s/schemes/%d", dir, i)
	var err error
	if sc.Action, err = s.read(sd + "/action"); err != nil {
		return sc, err
	}
	p := &sc.Pattern
	for _, f := range []struct {
		name string
		v    *uint64
	}{{"sz/min", &p.SzMin}, {"sz/max", &p.SzMax}, {"nr_accesses/min", &p.NrMin}, {"nr_accesses/max", &p.NrMax},
		{"age/min", &p.AgeMin}, {"age/max", &p.AgeMax}} {
		if *f.v, err = s.readUint(sd + "/access_pattern/" + f.name); err != nil {
			return sc, err
		}
	}
	for _, f := range []string{"/filters/nr_filters", "/core_filters/nr_filters"} {
		if n, err := s.readUint(sd + f); err == nil {
			sc.Filters += int(n)
		}
	}
	for _, f := range []string{"/quotas/ms", "/quotas/bytes"} {
		if v, err := s.readUint(sd + f); err == nil && v > 0 {
			sc.Quota = true
		}
	}
	return sc, nil
}

// maxAccesses is nr_accesses at every check: the sampling intervals per
// aggregation interval, as DAMON counts them; 0 when unknown.
func (c Context) maxAccesses() uint64 {
	if c.Sample <= 0 || c.Tuned {
		return 0
	}
	return uint64(c.Aggr / c.Sample)
}

// all reports whether p matches every region a context with c's intervals
// can report.
func (p Pattern) all(c Context) bool {
	maxNr := c.maxAccesses()
	return p.SzMin == 0 && p.SzMax >= math.MaxUint64/2 && p.NrMin == 0 && maxNr > 0 && p.NrMax >= maxNr &&
		p.AgeMin == 0 && p.AgeMax >= math.MaxUint32
}

// describe says which regions p matches, in words, with ages in time as
// well when c's intervals are known: "regions nr_accesses 0..1 age >= 12
// (1m0s)", or "every region".
func (p Pattern) describe(c Context) string {
	if p.all(c) {
		return "every region"
	}
	var parts []string
	if p.SzMin > 0 || p.SzMax < math.MaxUint64/2 {
		parts = append(parts, "size "+span(p.SzMin, p.SzMax, math.MaxUint64/2, nil))
	}
	if maxNr := c.maxAccesses(); p.NrMin > 0 || maxNr == 0 || p.NrMax < maxNr {
		parts = append(parts, "nr_accesses "+span(p.NrMin, p.NrMax, math.MaxUint32, nil))
	}
	if p.AgeMin > 0 || p.AgeMax < math.MaxUint32 {
		var in func(uint64) string
		if !c.Tuned && c.Aggr > 0 {
			in = func(v uint64) string { return (time.Duration(v) * c.Aggr).String() }
		}
		parts = append(parts, "age "+span(p.AgeMin, p.AgeMax, math.MaxUint32, in))
	}
	return "regions " + strings.Join(parts, " ")
}

// span writes [lo, hi] as "lo..hi", ">= lo" when hi is at least top, or
// "<= hi" when lo is 0; in, when set, adds each bound in other units.
func span(lo, hi, top uint64, in func(uint64) string) string {
	f := func(v uint64) string {
		if in == nil {
			return strconv.FormatUint(v, 10)
		}
		return fmt.Sprintf("%d (%s)", v, in(v))
	}
	switch {
	case hi >= top:
		return ">= " + f(lo)
	case lo == 0:
		return "<= " + f(hi)
	}
	return f(lo) + ".." + f(hi)
}

// view is one scheme whose tried regions the agent reads.
type view struct {
	ctx    Context
	scheme Scheme
	own    bool // the agent's kdamond
	// partial: the scheme lists only the regions it matched.
	partial bool
	source  string
	// pid is the process whose virtual addresses the regions are (the
	// agent's fvaddr kdamond); 0 for physical addresses.
	pid uint32
}

// takes reports whether b's extents are in the address space v's regions
// are: every block's for physical addresses, its process's for virtual.
func (v view) takes(b Block) bool { return v.pid == 0 || v.pid == b.PID }

// sharedViews lists the schemes of running kdamonds' paddr contexts.
func sharedViews(kds []Kdamond) []view {
	var out []view
	for _, kd := range kds {
		if !kd.On {
			continue
		}
		for _, c := range kd.Contexts {
			if c.Ops != "paddr" {
				continue
			}
			for _, sc := range c.Schemes {
				out = append(out, newView(false, c, sc))
			}
		}
	}
	return out
}

// newView names a scheme as heat samples cite it: "shared: kdamond 0
// scheme 0 pageout, regions nr_accesses <= 1 age >= 12 (1m0s)".
func newView(own bool, c Context, sc Scheme) view {
	mode := "shared"
	if own {
		mode = "own"
	}
	where := "kdamond " + strconv.Itoa(c.Kdamond)
	if c.Index > 0 {
		where += " context " + strconv.Itoa(c.Index)
	}
	src := fmt.Sprintf("%s: %s scheme %d %s, %s", mode, where, sc.Index, sc.Action, sc.Pattern.describe(c))
	var notes []string
	if sc.Filters > 0 {
		notes = append(notes, fmt.Sprintf("%d core filter(s)", sc.Filters))
	}
	if sc.Quota {
		notes = append(notes, "within a quota")
	}
	if c.Tuned {
		notes = append(notes, "intervals tuned by the kernel")
	}
	if len(notes) > 0 {
		src += " (" + strings.Join(notes, ", ") + ")"
	}
	return view{ctx: c, scheme: sc, own: own, partial: !sc.Pattern.all(c) || sc.Filters > 0 || sc.Quota, source: src}
}

// mergeRanges sorts rs and joins ranges that overlap or touch; it reuses
// rs's array.
func mergeRanges(rs []Range) []Range {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b Range) int {
		if a.Start != b.Start {
			return cmp.Compare(a.Start, b.Start)
		}
		return cmp.Compare(a.End, b.End)
	})
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Start <= last.End {
			last.End = max(last.End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}
