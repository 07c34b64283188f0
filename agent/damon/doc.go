// Package damon gives live blocks an access heat measured in the kernel by
// DAMON, the Data Access MONitor, through its sysfs admin interface
// (Sysfs, rooted at a configurable /sys; its parsers take bytes and fuzz).
//
// Open detects one of four modes (Detect, then the operations the
// kernel offers the agent's own kdamond), which Status says in words:
//
//   - OwnVaddr: no kdamond directory exists and the context the agent
//     makes lists fvaddr in avail_operations (Config.Ops "auto"). The agent
//     makes kdamond 0 with one fvaddr context (virtual addresses, target
//     regions kept as written; the kernel's vaddr would replace them with
//     the whole address space every update interval), one target per
//     process with live blocks (pid_target its pid, regions its blocks'
//     virtual pages, merged and capped at MaxRegions/2 over all targets,
//     shared evenly) and one stat scheme per target over every region,
//     whose core filter (type target, matching N) keeps that target's
//     regions alone: scheme i's tried regions are target i's, virtual
//     addresses of its pid, joined with that process's blocks only. Run
//     commits the targets when a process gets its first block or loses its
//     last (or its ranges change), at most once a read; with no target
//     left it turns the kdamond off. DAMON stops the kdamond by itself
//     when every target's process has exited; the next commit sees it off
//     and turns it on.
//   - Own: the same where the kernel has no fvaddr, or Config.Ops is
//     "paddr": one paddr context (Config's intervals and region bounds)
//     and one scheme of action stat whose access pattern matches every
//     region, so its tried regions list every monitored region with
//     nr_accesses and age. Its target regions are the live blocks' physical
//     ranges, merged, with the smallest gaps closed until at most
//     MaxRegions/2 remain; Run commits them (state on, then commit) when
//     they change, at most once a read.
//     In both own modes Close turns the kdamond off and removes it. While
//     it runs the kernel refuses anyone another kdamond (EBUSY); an agent
//     killed without Close leaves it running, and the next agent shares it
//     if it is paddr (a vaddr one it cannot share: unavailable).
//   - Shared: a kdamond something else runs has a paddr context with
//     schemes. The agent never writes its inputs nor stops it: it writes
//     only update_schemes_tried_regions to its state file and reads what
//     each scheme matched. Heat is then partial, only the regions the
//     scheme matched (a pageout scheme's: the cold ones), and every sample
//     says which scheme and pattern in its source.
//   - Unavailable: no sysfs interface, not root, no paddr operations, or a
//     kdamond runs with nothing to share (the kernel refuses a second one
//     while any runs), or kdamond directories something else left off
//     (changing nr_kdamonds would erase them). No heat, never an estimate.
//
// Run reads every period (Config.ReadInterval, at least one aggregation
// interval): the update command blocks in the kernel until the next
// aggregation interval ends, holding DAMON's sysfs lock: meanwhile the
// kernel gives EBUSY to other writers, and to readers of a kdamond's state
// and pid, so every read and write here waits EBUSY out, 15 s at most
// (Open too, when another agent's read is under way). It then joins each
// region with the live blocks (Block, from the annotator, which owns
// live-block state) and hands the annotator one stratav1.HeatSample per
// block with resolved bytes: bytes resolved, monitored, covered by the
// regions read and cold (nr_accesses 0), the byte-weighted access rate
// (nr_accesses over the sampling intervals per aggregation interval) and
// the cold bytes' ages in seconds. A region's numbers are DAMON's, one
// check per region per sampling interval, so a block sharing a region with
// other memory shares its heat.
//
// With physical addresses (Own, Shared) a block's bytes are its pages
// with a known PFN at their latest resolution (its runs); pages that moved
// since the block was last resolved are not followed. With virtual
// addresses (OwnVaddr) they are the pages holding its range, as the hook
// last reported it, and its runs' pages (a walk's objects); a block's heat
// does not depend on its pages staying put: DAMON checks whatever page
// backs each address, so pages that moved (compaction, swap and back) are
// followed, and the block's own moves (a GC) come from the hook. Samples
// of OwnVaddr say "vaddr: kdamond 0 of the agent's, target pid P".
//
// Collector exports the strata_damon_* metrics; docs/damon.md gives the
// measurements and costs.
package damon
