package store

import (
	"cmp"
	"context"
	"fmt"
	"github.com/stratatrace/strata/collector/answer"
	"slices"
	"strings"
)

// Apps lists the applications holding records, latest record first (ties:
// by app id), each with its machines (sorted), executors, records, the
// times of its first and last record, its cached RDD blocks live now (as
// RDDs counts them) and the name of its latest analysed job.
func (q *querier) Apps(ctx context.Context) ([]answer.AppSummary, error) {
	if q.src.closed() {
		return nil, fmt.Errorf("apps: %w", ErrClosed)
	}
	d := q.src
	sel := d.sel("app_id, node_name, executor_id, count(*), min(time_ns), max(time_ns)") +
		" FROM records WHERE 1 = 1" + d.visibleAll() + " GROUP BY app_id, node_name, executor_id"
	apps := map[string]*appListed{}
	err := q.each(ctx, sel, func(r row) {
		id, node, exec, n, first, last := r.str(), r.str(), r.str(), r.u64(), r.i64(), r.i64()
		a := apps[id]
		if a == nil {
			a = &appListed{sum: answer.AppSummary{AppID: id, FirstNs: first, LastNs: last}, machines: map[string]bool{}, executors: map[string]bool{}}
			apps[id] = a
		}
		a.machines[node], a.executors[exec] = true, true
		a.sum.Records += n
		a.sum.FirstNs, a.sum.LastNs = min(a.sum.FirstNs, first), max(a.sum.LastNs, last)
	})
	if err != nil {
		return nil, fmt.Errorf("query apps: %w", err)
	}
	live := liveBlocksSQL(d, "app_id", "access_kind IN "+lifecycleKinds+" AND "+cachedCond+d.visibleAll())
	err = q.each(ctx, live, func(r row) {
		id, n := r.str(), r.u64()
		if a := apps[id]; a != nil {
			a.sum.LiveBlocks = n
		}
	})
	if err != nil {
		return nil, fmt.Errorf("query live blocks: %w", err)
	}
	if err := q.appNames(ctx, apps); err != nil {
		return nil, err
	}
	out := make([]answer.AppSummary, 0, len(apps))
	for _, a := range apps {
		for m := range a.machines {
			a.sum.Machines = append(a.sum.Machines, m)
		}
		slices.Sort(a.sum.Machines)
		a.sum.Executors = uint32(len(a.executors))
		out = append(out, a.sum)
	}
	slices.SortFunc(out, func(a, b answer.AppSummary) int {
		return cmp.Or(cmp.Compare(b.LastNs, a.LastNs), cmp.Compare(a.AppID, b.AppID))
	})
	return out, nil
}

// appListed is an application as Apps gathers it.
type appListed struct {
	sum       answer.AppSummary
	machines  map[string]bool
	executors map[string]bool
}

// appNames names each of apps by its latest analysed job (latest
// finish, then job id) that has a name.
func (q *querier) appNames(ctx context.Context, apps map[string]*appListed) error {
	if len(apps) == 0 {
		return nil
	}
	d := q.src
	ids := make([]string, 0, len(apps))
	for id := range apps {
		ids = append(ids, d.lit(id))
	}
	slices.Sort(ids)
	jobs, err := q.results(ctx, d.sel("res")+" FROM "+d.jobs()+" WHERE app IN ("+strings.Join(ids, ", ")+") ORDER BY fin DESC, job_id")
	if err != nil {
		return fmt.Errorf("query app names: %w", err)
	}
	for _, j := range jobs {
		if a := apps[j.GetAppId()]; a != nil && a.sum.Name == "" {
			a.sum.Name = j.GetName()
		}
	}
	return nil
}
