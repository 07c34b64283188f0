package damon

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
	"time"
)

// errNoPaddr: the kernel's DAMON has no physical-address operations.
var errNoPaddr = errors.New("no physical-address operations")

// ownKdamond is the kdamond the agent made: kdamond 0, one paddr context
// with one target whose regions are the live blocks' physical ranges, and
// one stat scheme over every region, so its tried regions list them all.
type ownKdamond struct {
	s   Sysfs
	ctx Context // its settings, as written
	on  bool
	// ranges are the target regions last committed.
	ranges []Range
}

// The agent's kdamond is the only one: it is made when nr_kdamonds is 0.
const ownIndex = 0

// makeOwn makes the agent's kdamond and writes everything but its target
// regions; it stays off until the first commit. On error it removes what it
// made.
func (s Sysfs) makeOwn(cfg Config) (*ownKdamond, error) {
	if err := s.writeUint("kdamonds/nr_kdamonds", 1); err != nil {
		return nil, err
	}
	o := &ownKdamond{s: s, ctx: Context{Kdamond: ownIndex, Ops: "paddr", AddrUnit: 1,
		Sample: cfg.Sample, Aggr: cfg.Aggr, Update: cfg.Update}}
	if err := o.setup(cfg); err != nil {
		return nil, errors.Join(err, o.remove())
	}
	return o, nil
}

func (o *ownKdamond) setup(cfg Config) error {
	s := o.s
	if err := s.writeUint(kdamondDir(ownIndex)+"/contexts/nr_contexts", 1); err != nil {
		return err
	}
	dir := contextDir(ownIndex, 0)
	avail, err := s.read(dir + "/avail_operations")
	switch {
	case errors.Is(err, fs.ErrNotExist): // older kernels: writing operations says
	case err != nil:
		return err
	case !slices.Contains(parseOps([]byte(avail)), "paddr"):
		return fmt.Errorf("%w (avail_operations: %s)", errNoPaddr, strings.Join(parseOps([]byte(avail)), " "))
	}
	sc := dir + "/schemes/0"
	steps := []struct {
		rel string
		v   uint64
	}{
		{dir + "/monitoring_attrs/intervals/sample_us", uint64(cfg.Sample / time.Microsecond)},
		{dir + "/monitoring_attrs/intervals/aggr_us", uint64(cfg.Aggr / time.Microsecond)},
		{dir + "/monitoring_attrs/intervals/update_us", uint64(cfg.Update / time.Microsecond)},
		{dir + "/monitoring_attrs/nr_regions/min", uint64(cfg.MinRegions)},
		{dir + "/monitoring_attrs/nr_regions/max", uint64(cfg.MaxRegions)},
		{dir + "/targets/nr_targets", 1},
		{dir + "/schemes/nr_schemes", 1},
	}
	if err := s.write(dir+"/operations", "paddr"); err != nil {
		return err
	}
	for _, st := range steps {
		if err := s.writeUint(st.rel, st.v); err != nil {
			return err
		}
	}
	if err := s.write(sc+"/action", "stat"); err != nil {
		return err
	}
	// Every region: any size, any nr_accesses, any age.
	every := Pattern{SzMax: math.MaxUint64, NrMax: math.MaxUint32, AgeMax: math.MaxUint32}
	o.ctx.Schemes = []Scheme{{Action: "stat", Pattern: every}}
	for _, f := range []struct {
		name string
		v    uint64
	}{{"sz/min", every.SzMin}, {"sz/max", every.SzMax}, {"nr_accesses/min", every.NrMin}, {"nr_accesses/max", every.NrMax},
		{"age/min", every.AgeMin}, {"age/max", every.AgeMax}} {
		if err := s.writeUint(sc+"/access_pattern/"+f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// commit makes rs the target's regions: it turns the kdamond on the first
// time, and commits the new regions to it after.
func (o *ownKdamond) commit(rs []Range) error {
	s := o.s
	rd := contextDir(ownIndex, 0) + "/targets/0/regions"
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
	cmd := "commit"
	if !o.on {
		cmd = "on"
	}
	if err := s.write(kdamondDir(ownIndex)+"/state", cmd); err != nil {
		return err
	}
	o.on = true
	o.ranges = slices.Clone(rs)
	o.ctx.Ranges = o.ranges
	return nil
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
