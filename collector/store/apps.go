package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Apps lists the applications holding records, latest record first (ties:
// by app id), each with its machines (sorted), executors, records and the
// times of its first and last record.
func (q *querier) Apps(ctx context.Context) ([]AppSummary, error) {
	if q.src.closed() {
		return nil, fmt.Errorf("apps: %w", ErrClosed)
	}
	d := q.src
	sel := d.sel("app_id, node_name, executor_id, count(*), min(time_ns), max(time_ns)") +
		" FROM records WHERE 1 = 1" + d.visibleAll() + " GROUP BY app_id, node_name, executor_id"
	type app struct {
		sum       AppSummary
		machines  map[string]bool
		executors map[string]bool
	}
	apps := map[string]*app{}
	err := q.each(ctx, sel, func(r row) {
		id, node, exec, n, first, last := r.str(), r.str(), r.str(), r.u64(), r.i64(), r.i64()
		a := apps[id]
		if a == nil {
			a = &app{sum: AppSummary{AppID: id, FirstNs: first, LastNs: last}, machines: map[string]bool{}, executors: map[string]bool{}}
			apps[id] = a
		}
		a.machines[node], a.executors[exec] = true, true
		a.sum.Records += n
		a.sum.FirstNs, a.sum.LastNs = min(a.sum.FirstNs, first), max(a.sum.LastNs, last)
	})
	if err != nil {
		return nil, fmt.Errorf("query apps: %w", err)
	}
	out := make([]AppSummary, 0, len(apps))
	for _, a := range apps {
		for m := range a.machines {
			a.sum.Machines = append(a.sum.Machines, m)
		}
		slices.Sort(a.sum.Machines)
		a.sum.Executors = uint32(len(a.executors))
		out = append(out, a.sum)
	}
	slices.SortFunc(out, func(a, b AppSummary) int {
		return cmp.Or(cmp.Compare(b.LastNs, a.LastNs), cmp.Compare(a.AppID, b.AppID))
	})
	return out, nil
}
