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
	start, end, ok := r.pages(q)
	if !ok {
		return ErrBadRange
	}
	withFlags := r.withFlags(q)
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
		if err := r.readChunk(pm, pid, a, int((b-a)/ps), nil, withFlags, &flagsErr); err != nil {
			return err
		}
		if err := r.foldChunk(pm, q.CPUNode, res); err != nil {
			return err
		}
		a = b
	}
	r.finish(res, withFlags, flagsErr)
	return nil
}

// finish emits the runs folded into r.out as res's and says what made them
// less complete.
func (r *Resolver) finish(res *Result, withFlags bool, flagsErr error) {
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
}

// withFlags reports whether q reads kpageflags and kpagecount.
func (r *Resolver) withFlags(q Request) bool {
	return q.Flags == FlagsRead || q.Flags == FlagsDefault && !r.opts.NoFlags
}

// maxGatherGap is the most pages between two requests that one chunk
// still reads together: the gap's pagemap entries cost far less than the
// preads a request of its own costs (pagemap, kpageflags, the recheck).
const maxGatherGap = 256

// pages returns the whole pages of q, [start, end); ok is false for a
// range that is empty or wraps, end 0 included (the top of the space).
func (r *Resolver) pages(q Request) (start, end uint64, ok bool) {
	ps := r.cur.ps
	last := q.VAddr + q.Length - 1
	if q.Length == 0 || last < q.VAddr {
		return 0, 0, false
	}
	end = last&^(ps-1) + ps
	return q.VAddr &^ (ps - 1), end, end != 0
}

// gather returns the end of the requests from reqs[i] that one chunk reads
// together: each starting at or after the page where the one before ends,
// at most maxGatherGap pages after it, asking the same of kpageflags, and
// all within ChunkPages pages. A walk's extents are such requests.
func (r *Resolver) gather(reqs []Request, i int) int {
	ps := r.cur.ps
	chunk := uint64(r.opts.ChunkPages) * ps
	start, prev, ok := r.pages(reqs[i])
	if !ok || prev-start > chunk {
		return i + 1
	}
	flags := r.withFlags(reqs[i])
	j := i + 1
	for ; j < len(reqs); j++ {
		s, e, ok := r.pages(reqs[j])
		if !ok || s < prev || s-prev > maxGatherGap*ps || e-start > chunk || r.withFlags(reqs[j]) != flags {
			break
		}
		prev = e
	}
	return j
}

// resolveGathered resolves requests that gather put together as one
// chunk: one pagemap read, and one recheck per piece, for all of them, the
// kpageflags of their pages read together, each request folded into its
// own result.
func (r *Resolver) resolveGathered(pm *procmem.Pagemap, pid int, reqs []Request, out []Result) error {
	ps := r.cur.ps
	base, _, _ := r.pages(reqs[0])
	want := make([]pageSpan, len(reqs))
	for k, q := range reqs {
		s, e, _ := r.pages(q)
		want[k] = pageSpan{int((s - base) / ps), int((e - base) / ps)}
	}
	withFlags := r.withFlags(reqs[0])
	var flagsErr error
	if err := r.readChunk(pm, pid, base, want[len(want)-1].hi, want, withFlags, &flagsErr); err != nil {
		return err
	}
	c := &r.cur
	vmas := vmaCursor{maps: &r.maps, fs: r.fs, pid: pid}
	k := 0
	out[0] = Result{}
	r.out.reset()
	c.flagsEnd = want[0].hi
	for lo := want[0].lo; k < len(want); {
		hi := c.pieceEnd(lo)
		if c.flagsOK && !r.opts.NoRecheck {
			if err := c.recheck(pm, lo, hi); err != nil { // 5
				return err
			}
		}
		for ; k < len(want) && want[k].lo < hi; k++ {
			if err := r.fold(c, max(lo, want[k].lo), min(hi, want[k].hi), reqs[k].CPUNode, &vmas, &out[k]); err != nil { // 6
				return err
			}
			if want[k].hi > hi {
				break // it goes on in the next piece
			}
			r.finish(&out[k], withFlags, flagsErr)
			if k+1 < len(want) {
				out[k+1] = Result{}
				r.out.reset()
				c.flagsEnd = want[k+1].hi
			}
		}
		if k < len(want) {
			lo = max(hi, want[k].lo)
		}
	}
	return nil
}

// readChunk runs steps 1 to 4 over the n pages from a into r.cur, reading
// kpageflags for the pages want lists (every page when nil). A failure to
// read kpageflags or kpagecount is not an error: it goes to *flagsErr and
// leaves the pages FLAGS_UNKNOWN.
func (r *Resolver) readChunk(pm *procmem.Pagemap, pid int, a uint64, n int, want []pageSpan, withFlags bool, flagsErr *error) error {
	c := &r.cur
	c.reset(pid, r.liveProc, a, n)
	c.want = want
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
