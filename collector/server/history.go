package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/history"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// traceSource is what the analyzer reads of an application's traces.
type traceSource interface {
	Cached(ctx context.Context, appID string) ([]store.CachedPages, error)
	Overhead(ctx context.Context, appID string) ([]*stratav1.OverheadRow, error)
	FaultNodes(ctx context.Context, appID string) (local, remote uint64, err error)
}

// analyzer runs the heuristics engine on a job, adding the cross-layer
// heuristics when the store holds traces of the job's application.
type analyzer struct {
	engine *heuristics.Engine
	traces traceSource
	log    *slog.Logger
}

func (a analyzer) Analyze(j *job.Job) *stratav1.JobResult {
	if ts := a.summary(j.AppID); ts != nil {
		return a.engine.AnalyzeWithTrace(j, ts)
	}
	return a.engine.Analyze(j)
}

// summary builds the cross-layer input from the store, nil when there are
// no traces of appID.
func (a analyzer) summary(appID string) *heuristics.TraceSummary {
	if appID == "" || a.traces == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cached, err := a.traces.Cached(ctx, appID)
	if err != nil {
		a.log.Warn("read traces for cross-layer heuristics", "app", appID, "err", err)
		return nil
	}
	over, err := a.traces.Overhead(ctx, appID)
	if err != nil {
		a.log.Warn("read workload counters for cross-layer heuristics", "app", appID, "err", err)
	}
	ts := summarize(appID, cached, over)
	local, remote, err := a.traces.FaultNodes(ctx, appID)
	if err != nil {
		a.log.Warn("read fault samples for cross-layer heuristics", "app", appID, "err", err)
	} else if ts != nil && local+remote > 0 {
		ts.Faults = &heuristics.FaultShare{Local: local, Remote: remote}
	}
	return ts
}

// summarize turns per-RDD, per-node page counts and workload counters into
// the heuristics' TraceSummary; nil when there is nothing.
func summarize(appID string, cached []store.CachedPages, over []*stratav1.OverheadRow) *heuristics.TraceSummary {
	if len(cached) == 0 && len(over) == 0 {
		return nil
	}
	ts := &heuristics.TraceSummary{AppID: appID, PageSize: 4096}
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
func jobHistoryPoller(c Config, st store.JobStore, traces traceSource, log *slog.Logger) (func(context.Context) error, error) {
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
	p, err := history.New(history.Config{Sources: c.History, Interval: time.Duration(c.HistoryInterval), Logger: log},
		analyzer{engine: eng, traces: traces, log: log.With("component", "analyzer")}, st)
	if err != nil {
		return nil, err
	}
	log.Info("polling job histories", "sources", c.History, "interval", time.Duration(c.HistoryInterval))
	return p.Run, nil
}
