package heuristics

import (
	"strconv"

	"github.com/stratatrace/strata/collector/job"
)

// Remote Faults (cross-layer, docs/heuristics.md#remote-node-faults): the
// share of page faults in cached blocks whose page lived on another NUMA
// node than the faulting CPU. Needs fault tracing (Faults) and at least
// min_faults faults; score 0 (one number per application).

// RemoteFaultsParams are the parameters of Remote-Node Faults.
type RemoteFaultsParams struct {
	Common              `yaml:",inline"`
	RemoteShareSeverity Thresholds `yaml:"remote_share_severity" check:"asc" help:"sampled faults on another node's page / all sampled faults"`
	MinFaults           int64      `yaml:"min_faults" help:"fewer sampled faults are not rated"`
}

var remoteFaults = register(def[RemoteFaultsParams]{Key: "remote_faults", Name: "Remote-Node Faults", Order: 303,
	Defaults: RemoteFaultsParams{RemoteShareSeverity: Thresholds{0.1, 0.25, 0.4, 0.5}, MinFaults: 1000},
	BuildTrace: func(p RemoteFaultsParams) TraceHeuristic {
		return &RemoteFaults{share: p.RemoteShareSeverity, minFaults: p.MinFaults}
	}})

// RemoteFaults is the remote-node fault share heuristic.
type RemoteFaults struct {
	share     Thresholds
	minFaults int64
}

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
