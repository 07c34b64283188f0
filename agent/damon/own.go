package damon

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// errNoPaddr: the kernel's DAMON has no physical-address operations.
var errNoPaddr = errors.New("no physical-address operations")

// errNoOps: the kernel's DAMON has neither operations the agent uses.
var errNoOps = errors.New("neither fixed-virtual-address nor physical-address operations")

// The operations sets the agent's own kdamond uses. fvaddr is DAMON's
// virtual-address monitoring with the target regions kept as written; its
// vaddr sibling, registered with it, replaces them with the whole address
// space every update interval.
const (
	opsPaddr  = "paddr"
	opsFvaddr = "fvaddr"
)

// chooseOps picks the operations of the agent's kdamond from the kernel's
// avail_operations (nil: the file is absent, as on kernels older than it,
// which get paddr): fvaddr where listed and want is "auto" (or empty),
// paddr otherwise.
func chooseOps(avail []string, want string) (string, error) {
	if avail == nil {
		return opsPaddr, nil
	}
	if want != opsPaddr && slices.Contains(avail, opsFvaddr) {
		return opsFvaddr, nil
	}
	if slices.Contains(avail, opsPaddr) {
		return opsPaddr, nil
	}
	err := errNoOps
	if want == opsPaddr {
		err = errNoPaddr
	}
	return "", fmt.Errorf("%w (avail_operations: %s)", err, strings.Join(avail, " "))
}

// everyRegion is the access pattern of the agent's stat schemes: any size,
// any nr_accesses, any age.
var everyRegion = Pattern{SzMax: math.MaxUint64, NrMax: math.MaxUint32, AgeMax: math.MaxUint32}

// target is one process the agent's fvaddr kdamond monitors: its pid and
// the virtual ranges of its live blocks.
type target struct {
	pid    uint32
	ranges []Range
}

func (t target) equal(u target) bool { return t.pid == u.pid && slices.Equal(t.ranges, u.ranges) }

// ownKdamond is the kdamond the agent made: kdamond 0 with one context.
// With paddr it has one target whose regions are the live blocks' physical
// ranges and one stat scheme over every region, so its tried regions list
// them all. With fvaddr it has one target per process with live blocks
// (pid_target its pid, regions its blocks' virtual ranges) and one stat
// scheme per target whose core filter keeps that target's regions alone,
// so scheme i's tried regions are target i's.
type ownKdamond struct {
	s   Sysfs
	ctx Context // its settings, as written
	on  bool
	// ranges are the paddr target regions last committed.
	ranges []Range
	// targets are the fvaddr targets last committed, in target order;
	// schemes is how many target schemes its files hold (-1 unknown,
	// after a failed write).
	targets []target
	schemes int
}

// The agent's kdamond is the only one: it is made when nr_kdamonds is 0.
const ownIndex = 0

// makeOwn makes the agent's kdamond and writes everything but its targets'
// regions (with fvaddr, its targets and schemes too); it stays off until
// the first commit. On error it removes what it made.
func (s Sysfs) makeOwn(cfg Config) (*ownKdamond, error) {
	if err := s.writeUint("kdamonds/nr_kdamonds", 1); err != nil {
		return nil, err
	}
	o := &ownKdamond{s: s, ctx: Context{Kdamond: ownIndex, AddrUnit: 1,
		Sample: cfg.Sample, Aggr: cfg.Aggr, Update: cfg.Update, Schemes: []Scheme{{Action: "stat", Pattern: everyRegion}}}}
	if err := o.setup(cfg); err != nil {
		return nil, errors.Join(err, o.remove())
	}
	return o, nil
}

// virtual reports whether the kdamond monitors virtual ranges (fvaddr).
func (o *ownKdamond) virtual() bool { return o.ctx.Ops == opsFvaddr }

func (o *ownKdamond) setup(cfg Config) error {
	s := o.s
	if err := s.writeUint(kdamondDir(ownIndex)+"/contexts/nr_contexts", 1); err != nil {
		return err
	}
	dir := contextDir(ownIndex, 0)
	var avail []string
	switch b, err := s.readFile(dir + "/avail_operations"); {
	case errors.Is(err, fs.ErrNotExist): // older kernels: writing operations says
	case err != nil:
		return err
	default:
		avail = parseOps(b)
	}
	ops, err := chooseOps(avail, strings.ToLower(cfg.Ops))
	if err != nil {
		return err
	}
	o.ctx.Ops = ops
	type step struct {
		rel string
		v   uint64
	}
	steps := []step{
		{dir + "/monitoring_attrs/intervals/sample_us", uint64(cfg.Sample / time.Microsecond)},
		{dir + "/monitoring_attrs/intervals/aggr_us", uint64(cfg.Aggr / time.Microsecond)},
		{dir + "/monitoring_attrs/intervals/update_us", uint64(cfg.Update / time.Microsecond)},
		{dir + "/monitoring_attrs/nr_regions/min", uint64(cfg.MinRegions)},
		{dir + "/monitoring_attrs/nr_regions/max", uint64(cfg.MaxRegions)},
	}
	if ops == opsPaddr {
		steps = append(steps, step{dir + "/targets/nr_targets", 1}, step{dir + "/schemes/nr_schemes", 1})
	}
	if err := s.write(dir+"/operations", ops); err != nil {
		return err
	}
	for _, st := range steps {
		if err := s.writeUint(st.rel, st.v); err != nil {
			return err
		}
	}
	if ops == opsPaddr {
		return o.writeScheme(0, -1)
	}
	return nil // fvaddr: targets and schemes come with the first commit
}

// writeScheme writes scheme i: action stat over every region and, for
// target t >= 0, one core filter that keeps target t's regions alone. The
// filter matches regions of target t with matching N, so it takes the
// regions of every other target, and rejects them (allow N, the default):
// kernels with allow pass what no filter took when the last filter
// rejects; older ones drop what a filter takes.
func (o *ownKdamond) writeScheme(i, t int) error {
	s := o.s
	sc := fmt.Sprintf("%s/schemes/%d", contextDir(ownIndex, 0), i)
	if err := s.write(sc+"/action", "stat"); err != nil {
		return err
	}
	p := everyRegion
	for _, f := range []struct {
		name string
		v    uint64
	}{{"sz/min", p.SzMin}, {"sz/max", p.SzMax}, {"nr_accesses/min", p.NrMin}, {"nr_accesses/max", p.NrMax},
		{"age/min", p.AgeMin}, {"age/max", p.AgeMax}} {
		if err := s.writeUint(sc+"/access_pattern/"+f.name, f.v); err != nil {
			return err
		}
	}
	if t < 0 {
		return nil
	}
	fd := sc + "/filters/0"
	if err := s.writeUint(sc+"/filters/nr_filters", 1); err != nil {
		return err
	}
	if err := s.write(fd+"/type", "target"); err != nil {
		return err
	}
	if err := s.writeUint(fd+"/damon_target_idx", uint64(t)); err != nil {
		return err
	}
	return s.write(fd+"/matching", "N")
}

// writeRegions makes rs the regions of the target directory td.
func (o *ownKdamond) writeRegions(td string, rs []Range) error {
	s := o.s
	rd := td + "/regions"
	if err := s.writeUint(rd+"/nr_regions", uint64(len(rs))); err != nil {
		return err
	}
	for i, r := range rs {
		if err := s.writeUint(fmt.Sprintf("%s/%d/start", rd, i), r.Start); err != nil {
			return err
		}
		if err := s.writeUint(fmt.Sprintf("%s/%d/end", rd, i), r.End); err != nil {
			return err
		}
	}
	return nil
}

// apply turns the kdamond on the first time, and commits what was written
// to it after.
func (o *ownKdamond) apply() error {
	cmd := "commit"
	if !o.on {
		cmd = "on"
	}
	if err := o.s.write(kdamondDir(ownIndex)+"/state", cmd); err != nil {
		return err
	}
	o.on = true
	return nil
}

// commit makes rs the paddr target's regions: it turns the kdamond on the
// first time, and commits the new regions to it after.
func (o *ownKdamond) commit(rs []Range) error {
	if err := o.writeRegions(contextDir(ownIndex, 0)+"/targets/0", rs); err != nil {
		return err
	}
	if err := o.apply(); err != nil {
		return err
	}
	o.ranges = slices.Clone(rs)
	o.ctx.Ranges = o.ranges
	return nil
}

// commitTargets makes ts the fvaddr kdamond's targets, one stat scheme per
// target, and turns it on or commits them. Without targets it turns the
// kdamond off: DAMON stops a virtual-address kdamond none of whose targets
// lives, and the kernel stops it by itself when every target's process has
// exited, which commitTargets sees in the state file and then turns it on
// again.
func (o *ownKdamond) commitTargets(ts []target) error {
	s := o.s
	state := kdamondDir(ownIndex) + "/state"
	if st, err := s.read(state); err == nil && st == "off" {
		o.on = false
	}
	if len(ts) == 0 {
		if o.on {
			if err := s.write(state, "off"); err != nil {
				return err
			}
			o.on = false
		}
		o.targets = nil
		return nil
	}
	dir := contextDir(ownIndex, 0)
	if err := s.writeUint(dir+"/targets/nr_targets", uint64(len(ts))); err != nil {
		return err
	}
	for i, t := range ts {
		td := fmt.Sprintf("%s/targets/%d", dir, i)
		if err := s.writeUint(td+"/pid_target", uint64(t.pid)); err != nil {
			return err
		}
		if err := o.writeRegions(td, t.ranges); err != nil {
			return err
		}
	}
	if len(ts) != o.schemes {
		o.schemes = -1
		if err := s.writeUint(dir+"/schemes/nr_schemes", uint64(len(ts))); err != nil {
			return err
		}
		for i := range ts {
			if err := o.writeScheme(i, i); err != nil {
				return err
			}
		}
		o.schemes = len(ts)
	}
	if err := o.apply(); err != nil {
		return err
	}
	o.targets = make([]target, len(ts))
	for i, t := range ts {
		o.targets[i] = target{pid: t.pid, ranges: slices.Clone(t.ranges)}
	}
	return nil
}

// views are the fvaddr kdamond's schemes as samples cite them: scheme i
// reads target i, the process whose pid it names.
func (o *ownKdamond) views() []view {
	out := make([]view, len(o.targets))
	for i, t := range o.targets {
		c := o.ctx
		c.Ranges = t.ranges
		out[i] = view{ctx: c, scheme: Scheme{Index: i, Action: "stat", Pattern: everyRegion}, own: true, pid: t.pid,
			source: fmt.Sprintf("vaddr: kdamond %d of the agent's, target pid %d", ownIndex, t.pid)}
	}
	return out
}

// remove stops the kdamond when on and removes its directory.
func (o *ownKdamond) remove() error {
	var err error
	if o.on {
		err = o.s.write(kdamondDir(ownIndex)+"/state", "off")
		o.on = false
	}
	return errors.Join(err, o.s.writeUint("kdamonds/nr_kdamonds", 0))
}

// targetRanges returns the regions to monitor for the blocks' extents: all
// of them merged, then the smallest gaps between them closed until at most
// limit remain.
func targetRanges(exts [][]Range, limit int) []Range {
	var all []Range
	for _, e := range exts {
		all = append(all, e...)
	}
	return capRanges(mergeRanges(all), limit)
}

// vaddrTargets returns one target per pid in blocks with a virtual extent,
// in pid order: its blocks' extents merged, then capped as targetRanges
// caps them, at limit/len(targets) ranges each (at least one).
func vaddrTargets(blocks []Block, exts [][]Range, limit int) []target {
	byPID := map[uint32][]Range{}
	for i, b := range blocks {
		if len(exts[i]) > 0 {
			byPID[b.PID] = append(byPID[b.PID], exts[i]...)
		}
	}
	pids := slices.Sorted(maps.Keys(byPID))
	out := make([]target, len(pids))
	for i, pid := range pids {
		out[i] = target{pid: pid, ranges: capRanges(mergeRanges(byPID[pid]), limit/len(pids))}
	}
	return out
}

// capRanges joins sorted, disjoint ranges across their smallest gaps until
// at most limit remain (ties: the lower gap first).
func capRanges(rs []Range, limit int) []Range {
	limit = max(limit, 1)
	if len(rs) <= limit {
		return rs
	}
	gaps := make([]int, len(rs)-1)
	for i := range gaps {
		gaps[i] = i
	}
	slices.SortStableFunc(gaps, func(a, b int) int {
		return cmp.Compare(rs[a+1].Start-rs[a].End, rs[b+1].Start-rs[b].End)
	})
	join := make([]bool, len(rs)-1)
	for _, g := range gaps[:len(rs)-limit] {
		join[g] = true
	}
	out := make([]Range, 0, limit)
	cur := rs[0]
	for i := 1; i < len(rs); i++ {
		if join[i-1] {
			cur.End = rs[i].End
			continue
		}
		out = append(out, cur)
		cur = rs[i]
	}
	return append(out, cur)
}
