package resolver

import (
	"errors"
	"fmt"

	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// readKPages is the kernel side of steps 2 to 4: the spans of the chunk
// read from kpageflags (sorted by PFN, neighbours merged into one pread
// each), the head of each PMD-mapped folio checked, and kpagecount read for
// the pages pagemap does not call exclusive. On success c.flagsOK is set.
func (c *chunk) readKPages(kp *procmem.KPages) error {
	if err := kp.ReadSpans(c.spans, grow(&c.flags, c.n+len(c.heads)), nil); err != nil {
		return err
	}
	c.counts = c.counts[:0] // only pages in cspans have counts
	if len(c.cspans) > 0 {
		if err := kp.ReadSpans(c.cspans, nil, grow(&c.counts, c.n)); err != nil {
			return err
		}
	}
	if err := c.checkHeads(kp); err != nil {
		return err
	}
	c.flagsOK = true
	return nil
}

// AddFlags reads kpageflags and kpagecount for the pages of runs that a
// resolution without flags left FLAGS_UNKNOWN (Options.NoFlags,
// Request.Flags), typically the few a caller samples or shows, and returns
// runs for the same pages: those that need nothing as they are, the others
// resolved again with flags (and the recheck, unless Options.NoRecheck) as
// the pages are now, so a page that moved meanwhile shows its new PFN and
// one that is gone shows that. Adjacent runs are resolved together.
//
// runs must be of process pid and in rising address order, as any subset of
// one Result's runs is; cpuNode is the accessing CPU's node for CROSS_NODE,
// -1 when unknown. PFN-hidden runs stay as they are: their flags cannot be
// read. When kpageflags cannot be read the pages stay FLAGS_UNKNOWN and the
// error wraps ErrFlagsUnavailable.
func (r *Resolver) AddFlags(pid int, cpuNode int32, runs []*stratav1.PageRun) ([]*stratav1.PageRun, error) {
	need := func(x *stratav1.PageRun) bool {
		return x.GetState()&(stPresent|stFlagsUnkn|stHidden) == stPresent|stFlagsUnkn
	}
	// One request per group of adjacent runs that need flags; group[i] is
	// the request of run i, -1 for none.
	var reqs []Request
	group := make([]int, len(runs))
	ps := r.cur.ps
	for i, x := range runs {
		group[i] = -1
		if !need(x) {
			continue
		}
		if k := len(reqs) - 1; k >= 0 && group[i-1] == k && reqs[k].VAddr+reqs[k].Length == x.GetVaddr() {
			reqs[k].Length += uint64(x.GetCount()) * ps
		} else {
			reqs = append(reqs, Request{VAddr: x.GetVaddr(), Length: uint64(x.GetCount()) * ps, CPUNode: cpuNode, Flags: FlagsRead})
		}
		group[i] = len(reqs) - 1
	}
	if len(reqs) == 0 {
		return runs, nil
	}
	if r.kp == nil {
		return runs, fmt.Errorf("add flags: %w", r.kpErr)
	}
	res := make([]Result, len(reqs))
	if err := r.ResolveBatch(pid, reqs, res); err != nil {
		return runs, fmt.Errorf("add flags: %w", err)
	}
	var out []*stratav1.PageRun
	var warn []error
	for i, x := range runs {
		g := group[i]
		switch {
		case g < 0:
			out = append(out, x)
		case i > 0 && group[i-1] == g:
			// Already replaced with its group.
		case res[g].Err != nil:
			return runs, fmt.Errorf("add flags: %w", res[g].Err)
		default:
			out = append(out, res[g].Runs...)
			if errors.Is(res[g].Warning, ErrFlagsUnavailable) {
				warn = append(warn, res[g].Warning)
			}
		}
	}
	if len(warn) > 0 {
		return out, fmt.Errorf("add flags: %w", errors.Join(warn...))
	}
	return out, nil
}
