package resolver

import "github.com/stratatrace/strata/agent/procmem"

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
