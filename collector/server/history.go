package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/history"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// summaryTimeout bounds the store queries behind one job's TraceSummary.
const summaryTimeout = 30 * time.Second

// analyzer runs the heuristics engine on a job, adding the cross-layer
// heuristics when the store holds traces of the job's application.
type analyzer struct {
	engine *heuristics.Engine
	traces store.SummaryReader
	log    *slog.Logger
}

// Analyze implements history.Analyzer. A failure to read the traces is an
// error, not an analysis without them: the poller retries the job at its
// next poll rather than store a result that lacks the cross-layer part.
func (a analyzer) Analyze(ctx context.Context, j *job.Job) (*stratav1.JobResult, error) {
	// The trace queries of one job get a bound of their own, so one slow
	// query delays a poll instead of stopping the poller.
	ctx, cancel := context.WithTimeout(ctx, summaryTimeout)
	defer cancel()
	ts, err := a.summary(ctx, j.AppID)
	if err != nil {
		return nil, err
	}
	if ts != nil {
		return a.engine.AnalyzeWithTrace(j, ts), nil
	}
	return a.engine.Analyze(j), nil
}

// summary builds the cross-layer input from the store, nil when there are
// no traces of appID.
func (a analyzer) summary(ctx context.Context, appID string) (*heuristics.TraceSummary, error) {
	if appID == "" || a.traces == nil {
		return nil, nil
	}
	cached, err := a.traces.Cached(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("read cached pages of %s: %w", appID, err)
	}
	over, err := a.traces.Overhead(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("read workload counters of %s: %w", appID, err)
	}
	ts := summarize(appID, cached, over)
	if ts == nil {
		return nil, nil
	}
	machines, err := a.traces.Machines(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("read machines of %s: %w", appID, err)
	}
	ts.NUMANodes, ts.PageSize = topology(machines)
	if len(machines) > 1 && ts.PageSize == 0 {
		a.log.Warn("machines of one application differ in page size; sizes are shown in pages", "app", appID)
	}
	local, remote, err := a.traces.FaultNodes(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("read fault samples of %s: %w", appID, err)
	}
	if local+remote > 0 {
		ts.Faults = &heuristics.FaultShare{Local: local, Remote: remote}
	}
	if cr, ok := a.traces.(store.CacheReader); ok {
		if ts.Blocks, err = cr.CachedBlocks(ctx, appID); err != nil {
			return nil, fmt.Errorf("read cached blocks of %s: %w", appID, err)
		}
	}
	return ts, nil
}

// topology returns the NUMA node count and base page size of the machines
// that hold an application's records: the largest node count any of them
// reported (0 when none did), and their page size when they agree on one
// (0, unknown, otherwise).
func topology(machines []store.Machine) (numaNodes int, pageSize int64) {
	for i, m := range machines {
		numaNodes = max(numaNodes, int(m.NUMANodes))
		switch ps := int64(m.PageSize); {
		case i == 0:
			pageSize = ps
		case ps != pageSize:
			pageSize = 0
		}
	}
	return numaNodes, pageSize
}

// summarize turns per-RDD, per-node page counts and workload counters into
// the heuristics' TraceSummary; nil when there is nothing.
func summarize(appID string, cached []store.CachedPages, over []*stratav1.OverheadRow) *heuristics.TraceSummary {
	if len(cached) == 0 && len(over) == 0 {
		return nil
	}
	ts := &heuristics.TraceSummary{AppID: appID}
	byRDD := map[int32]*heuristics.RDDPages{}
	for _, c := range cached {
		r := byRDD[c.RDDID]
		if r == nil {
			r = &heuristics.RDDPages{RDDID: c.RDDID, PagesByNode: map[int32]int64{}}
			byRDD[c.RDDID] = r
		}
		r.TotalPages += int64(c.Pages)
		r.SwappedPages += int64(c.Swapped)
		r.THPPages += int64(c.THP)
		if c.Node >= 0 && c.Present > 0 {
			r.PagesByNode[c.Node] += int64(c.Present)
		}
	}
	for _, c := range cached {
		if r := byRDD[c.RDDID]; r != nil {
			ts.RDDs = append(ts.RDDs, *r)
			delete(byRDD, c.RDDID)
		}
	}
	for _, o := range over {
		ts.Workloads = append(ts.Workloads, o.GetCounters())
	}
	return ts
}

// jobHistoryPoller builds the poller of the configured history sources,
// nil when none are configured.
func jobHistoryPoller(c Config, st store.JobStore, traces store.SummaryReader, claims history.Claimer, log *slog.Logger,
	m *metrics) (func(context.Context) error, error) {
	if len(c.History) == 0 {
		return nil, nil
	}
	hc, err := heuristics.LoadConfig(c.Heuristics)
	if err != nil {
		return nil, err
	}
	eng, err := heuristics.NewEngine(hc)
	if err != nil {
		return nil, err
	}
	p, err := history.New(history.Config{Sources: c.History, Interval: time.Duration(c.HistoryInterval), Logger: log,
		MaxJobBytes: c.HistoryMaxJobBytes, Claims: claims, OnPoll: m.watchHistory(time.Duration(c.HistoryInterval))},
		analyzer{engine: eng, traces: traces, log: log.With("component", "analyzer")}, st)
	if err != nil {
		return nil, err
	}
	log.Info("polling job histories", "sources", c.History, "interval", time.Duration(c.HistoryInterval))
	return p.Run, nil
}

// jobClaimer is the part of a store that shares jobs among collectors
// (store.ClickHouse).
type jobClaimer interface {
	Owner() string
	JobClaims(ctx context.Context) (map[string]store.JobClaim, error)
	ClaimJobs(ctx context.Context, ids []string) error
}

// claims adapts a store's job claims to the poller's, nil when the store
// has none (DuckDB: one collector per store).
type claims struct{ st jobClaimer }

func claimsOf(st store.Store) history.Claimer {
	if c, ok := st.(jobClaimer); ok {
		return claims{c}
	}
	return nil
}

func (c claims) JobClaims(ctx context.Context) (map[string]history.Claim, error) {
	m, err := c.st.JobClaims(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]history.Claim, len(m))
	for id, jc := range m {
		out[id] = history.Claim{Mine: jc.Owner == c.st.Owner(), Decided: jc.Decided}
	}
	return out, nil
}

func (c claims) ClaimJobs(ctx context.Context, ids []string) error { return c.st.ClaimJobs(ctx, ids) }
