package resolver

import (
	"errors"
	"fmt"

	"github.com/stratatrace/strata/agent/procmem"
)

// resolve fills res for one request, chunk by chunk, with the steps the
// package comment names.
func (r *Resolver) resolve(pm *procmem.Pagemap, pid int, q Request, res *Result) error {
	ps := r.cur.ps
	last := q.VAddr + q.Length - 1
	if q.Length == 0 || last < q.VAddr {
		return ErrBadRange
	}
	start := q.VAddr &^ (ps - 1)
	end := last&^(ps-1) + ps // exclusive; 0 only at the top of the space
	if end == 0 {
		return ErrBadRange
	}
	withFlags := q.Flags == FlagsRead || q.Flags == FlagsDefault && !r.opts.NoFlags
	r.out.reset()
	var flagsErr error
	chunk := uint64(r.opts.ChunkPages) * ps
	pmd := uint64(pmdPages) * ps
	for a := start; a < end; {
		// Chunks end on a PMD boundary (ChunkPages is a multiple of 512),
		// so a PMD group never straddles two.
		b := end
		if end-a > chunk {
			b = (a + chunk) &^ (pmd - 1)
		}
		if err := r.readChunk(pm, pid, a, int((b-a)/ps), withFlags, &flagsErr); err != nil {
			return err
		}
		if err := r.foldChunk(pm, q.CPUNode, res); err != nil {
			return err
		}
		a = b
	}
	res.Runs = r.out.emit()
	var warn []error
	if res.Hidden > 0 {
		warn = append(warn, ErrPFNHidden)
	}
	switch {
	case !withFlags:
		if res.Present > res.Hidden {
			warn = append(warn, ErrFlagsNotRead)
		}
	case flagsErr != nil:
		warn = append(warn, flagsErr)
	case r.kp == nil && res.Present > 0:
		warn = append(warn, r.kpErr)
	}
	res.Warning = errors.Join(warn...)
	return nil
}

// readChunk runs steps 1 to 4 over the n pages from a into r.cur. A failure
// to read kpageflags or kpagecount is not an error: it goes to *flagsErr
// and leaves the pages FLAGS_UNKNOWN.
func (r *Resolver) readChunk(pm *procmem.Pagemap, pid int, a uint64, n int, withFlags bool, flagsErr *error) error {
	c := &r.cur
	c.reset(a, n)
	if err := c.readPagemap(pm); err != nil { // 1
		return err
	}
	if err := r.findPMDs(pm, c); err != nil { // 3, the scan
		return err
	}
	if withFlags && c.pfns > 0 {
		if r.kp == nil {
			*flagsErr = r.kpErr
		} else if err := c.readKPages(r.kp, r.opts.ReadAllCounts); err != nil { // 2, 3, 4
			*flagsErr = fmt.Errorf("%w: %w", ErrFlagsUnavailable, err)
		}
	}
	// Holes and, without flags, PMD-mapped folios (THP or hugetlb) are told
	// apart by their mapping.
	if r.maps == nil && (c.absent || len(c.heads) > 0 && !c.flagsOK) {
		m, err := r.fs.OpenMaps(pid)
		if err != nil {
			return err
		}
		r.maps = m
	}
	if c.hidden > 0 {
		c.nodesOfHidden(pid, r.liveProc)
	}
	return nil
}

// foldChunk runs steps 5 and 6 over r.cur, one piece at a time.
func (r *Resolver) foldChunk(pm *procmem.Pagemap, cpuNode int32, res *Result) error {
	c := &r.cur
	var vmas vmaCursor
	for lo := 0; lo < c.n; {
		hi := c.pieceEnd(lo)
		if c.flagsOK && !r.opts.NoRecheck {
			if err := c.recheck(pm, lo, hi); err != nil { // 5
				return err
			}
		}
		if err := r.fold(c, lo, hi, cpuNode, &vmas, res); err != nil { // 6
			return err
		}
		lo = hi
	}
	return nil
}
