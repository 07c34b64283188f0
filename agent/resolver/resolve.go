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
	c.reset(pid, r.liveProc, a, n)
	if err := c.readPagemap(pm); err != nil { // 1
		return err
	}
	if err := r.findPMDs(pm, c); err != nil { // 3, the scan
		return err
	}
	if !withFlags {
		c.flagsSkipped = true
		return nil
	}
	c.buildSpans(r.opts.ReadAllCounts) // 2
	switch {
	case len(c.spans) == 0:
	case r.kp == nil:
		*flagsErr = r.kpErr
	default:
		if err := c.readKPages(r.kp); err != nil { // 2, 3, 4
			*flagsErr = fmt.Errorf("%w: %w", ErrFlagsUnavailable, err)
		}
	}
	return nil
}

// foldChunk runs steps 5 and 6 over r.cur, one piece at a time.
func (r *Resolver) foldChunk(pm *procmem.Pagemap, cpuNode int32, res *Result) error {
	c := &r.cur
	vmas := vmaCursor{maps: &r.maps, fs: r.fs, pid: c.pid}
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
