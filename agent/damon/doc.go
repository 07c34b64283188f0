// Package damon gives live blocks an access heat measured in the kernel by
// DAMON, the Data Access MONitor, through its sysfs admin interface
// (Sysfs, rooted at a configurable /sys; its parsers take bytes and fuzz).
//
// Open detects one of three modes (Detect), which Status says in words:
//
//   - Own: no kdamond directory exists. The agent makes kdamond 0 with one
//     paddr context (Config's intervals and region bounds) and one scheme
//     of action stat whose access pattern matches every region, so its
//     tried regions list every monitored region with nr_accesses and age.
//     Its target regions are the live blocks' physical ranges, merged, with
//     the smallest gaps closed until at most MaxRegions/2 remain; Run
//     commits them (state on, then commit) when they change, at most once a
//     read. Close turns the kdamond off and removes it. While it runs the
//     kernel refuses anyone another kdamond (EBUSY); an agent killed
//     without Close leaves it running, and the next agent shares it.
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
// (Open too, when another agent's read is under way). It then joins each region with the live blocks' pages
// (Block: their runs at their latest resolution, from the annotator, which
// owns live-block state) and hands the annotator one stratav1.HeatSample
// per block with resolved pages: bytes resolved, monitored, covered by the
// regions read and cold (nr_accesses 0), the byte-weighted access rate
// (nr_accesses over the sampling intervals per aggregation interval) and
// the cold bytes' ages in seconds. A region's numbers are DAMON's, one
// check per region per sampling interval, so a block sharing a region with
// other memory shares its heat. Pages that moved since the block was last
// resolved are not followed.
//
// Collector exports the strata_damon_* metrics; docs/damon.md gives the
// measurements and costs.
package damon
