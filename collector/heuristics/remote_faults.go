package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Remote Faults (cross-layer): the share of page faults in cached blocks
// whose page lived on another NUMA node than the faulting CPU. Needs fault
// tracing (Faults) and at least min_faults faults; score 0 (one number per
// application).

func init() {
	register(entry{key: "remote_faults", name: "Remote-Node Faults", order: orderRemoteFaults,
		common: func(c *Config) Common { return c.RemoteFaults.Common },
		buildTrace: func(c *Config) TraceHeuristic {
			return &RemoteFaults{share: c.RemoteFaults.RemoteShareSeverity, minFaults: c.RemoteFaults.MinFaults}
		}})
}

// RemoteFaults is the remote-node fault share heuristic.
type RemoteFaults struct {
	share     Thresholds
	minFaults int64
}

// Name implements TraceHeuristic.
func (h *RemoteFaults) Name() string { return "Remote-Node Faults" }

// ApplyTrace implements TraceHeuristic.
func (h *RemoteFaults) ApplyTrace(_ *job.Job, ts *TraceSummary) Result {
	if ts.Faults == nil {
		return skip
	}
	total := ts.Faults.Local + ts.Faults.Remote
	if total == 0 || total < uint64(max(h.minFaults, 0)) {
		return skip
	}
	share := float64(ts.Faults.Remote) / float64(total)
	return Result{Severity: h.share.Ascending(share), Details: []Detail{
		detail("Remote share of faults", strconv.FormatFloat(share, 'f', 4, 64)),
		detail("Local faults", strconv.FormatUint(ts.Faults.Local, 10)),
		detail("Remote faults", strconv.FormatUint(ts.Faults.Remote, 10)),
	}}
}
