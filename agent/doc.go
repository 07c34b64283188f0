// Package agent wires one node agent together: the hook socket (hooksrv),
// the page resolver, the annotator that turns hook events into records, the
// spool that makes them durable and the streamer that ships them to the
// collector. Run is what cmd/strata-agent calls; it returns when its context
// ends, after flushing what the annotator holds into the spool.
//
// The agent needs CAP_SYS_ADMIN to see PFNs (pagemap zeroes them otherwise)
// and to read /proc/kpageflags; without it, it still runs and every present
// page says PFN_HIDDEN, with one warning in the log.
package agent
