package store

import (
	"context"
	"fmt"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Overhead: per (executor, pid), workload snapshots sharing a start are
// cumulative (the latest end wins: the last stored of the latest end);
// snapshots with different starts are successive intervals and are summed,
// saturating. A hardware counter is reported only when every summed
// snapshot measured it, and pmu_status is that of the snapshot with the
// latest end. Then the faults inside the app's blocks per process, the
// fault rate, and the page-walk shares of cycles (walkShares).

// Overhead returns the app's workload counters per (executor, pid).
func (q *querier) Overhead(ctx context.Context, appID string) ([]*stratav1.OverheadRow, error) {
	if err := q.check(appID); err != nil {
		return nil, fmt.Errorf("overhead: %w", err)
	}
	d := q.src
	sel := d.sel(`executor_id, pid, start_ns, end_ns,
	task_clock_ns, context_switches, cpu_migrations, minor_faults, major_faults, `+d.hwCounters()+`, pmu_status`) + `
FROM workloads WHERE app_id = ` + d.lit(appID) + d.visible(appID) + `
ORDER BY executor_id, pid, start_ns, end_ns, ` + d.batchOrder()
	type snapshot struct {
		exec       string
		pid        uint32
		start, end int64
		sw         [5]uint64
		hw         [6]uint64
		mask       uint8
		status     string
	}
	// Rows come by (executor, pid, start), latest last: the last of each
	// start is its snapshot.
	var snaps []snapshot
	err := q.each(ctx, sel, func(r row) {
		s := snapshot{exec: r.str(), pid: r.u32(), start: r.i64(), end: r.i64()}
		for i := range s.sw {
			s.sw[i] = r.u64()
		}
		for i := range s.hw {
			s.hw[i] = r.u64()
		}
		s.mask, s.status = r.u8(), r.str()
		if n := len(snaps); n > 0 && snaps[n-1].exec == s.exec && snaps[n-1].pid == s.pid && snaps[n-1].start == s.start {
			snaps[n-1] = s
			return
		}
		snaps = append(snaps, s)
	})
	if err != nil {
		return nil, fmt.Errorf("query overhead %s: %w", appID, err)
	}
	var (
		out     []*stratav1.OverheadRow
		cur     *stratav1.WorkloadCounters
		hw      [6]uint64
		allHave uint8
		lastEnd int64
	)
	finish := func() {
		if cur == nil {
			return
		}
		ptrs := []**uint64{&cur.Cycles, &cur.Instructions, &cur.DtlbMisses, &cur.WalkCyclesLoad, &cur.WalkCyclesStore, &cur.WalkCyclesRdd}
		for i, p := range ptrs {
			if allHave&(1<<i) != 0 {
				v := hw[i]
				*p = &v
			}
		}
		out = append(out, &stratav1.OverheadRow{Counters: cur})
	}
	for _, s := range snaps {
		if cur == nil || cur.ExecutorId != s.exec || cur.Pid != s.pid {
			finish()
			cur = &stratav1.WorkloadCounters{AppId: appID, ExecutorId: s.exec, Pid: s.pid, StartUnixNano: s.start, EndUnixNano: s.end}
			hw, allHave, lastEnd = [6]uint64{}, 0x3f, s.end
			cur.PmuStatus = s.status
		} else if s.end >= lastEnd {
			cur.PmuStatus, lastEnd = s.status, s.end
		}
		cur.StartUnixNano, cur.EndUnixNano = min(cur.StartUnixNano, s.start), max(cur.EndUnixNano, s.end)
		cur.TaskClockNs, cur.ContextSwitches = satAdd(cur.TaskClockNs, s.sw[0]), satAdd(cur.ContextSwitches, s.sw[1])
		cur.CpuMigrations, cur.MinorFaults = satAdd(cur.CpuMigrations, s.sw[2]), satAdd(cur.MinorFaults, s.sw[3])
		cur.MajorFaults = satAdd(cur.MajorFaults, s.sw[4])
		for i := range hw {
			hw[i] = satAdd(hw[i], s.hw[i])
		}
		allHave &= s.mask
	}
	finish()
	faults, err := q.faults(ctx, appID)
	if err != nil {
		return nil, err
	}
	finishOverhead(out, faults)
	return out, nil
}

// finishOverhead completes Overhead's rows from the app's fault rows: the
// faults inside the app's blocks per (executor, pid), the fault rate, and
// the page-walk shares (walkShares).
func finishOverhead(out []*stratav1.OverheadRow, faults []*stratav1.FaultRow) {
	type proc struct {
		exec string
		pid  uint32
	}
	rdd := map[proc]*stratav1.FaultCounts{}
	for _, f := range faults {
		k := proc{f.GetExecutorId(), f.GetPid()}
		sum := rdd[k]
		if sum == nil {
			sum = &stratav1.FaultCounts{}
			rdd[k] = sum
		}
		sum.Read += f.GetFaults().GetRead()
		sum.Write += f.GetFaults().GetWrite()
		sum.Exec += f.GetFaults().GetExec()
		sum.Major += f.GetFaults().GetMajor()
	}
	for _, r := range out {
		c := r.Counters
		r.RddFaults = rdd[proc{c.GetExecutorId(), c.GetPid()}]
		if r.RddFaults == nil {
			r.RddFaults = &stratav1.FaultCounts{}
		}
		if d := c.GetEndUnixNano() - c.GetStartUnixNano(); d > 0 {
			r.FaultRatePerSec = float64(c.GetMinorFaults()+c.GetMajorFaults()) / (float64(d) / 1e9)
		}
		walkShares(r)
	}
}

// walkShares sets the page-walk percentages of cycles that were measured:
// read = load-walk cycles, write = store-walk cycles, rdd = walk cycles
// sampled inside RDD blocks, and walk_pct = read + write of those present.
// Nothing is set without a non-zero cycle count: no number is invented.
func walkShares(r *stratav1.OverheadRow) {
	c := r.GetCounters()
	if c.Cycles == nil || c.GetCycles() == 0 {
		return
	}
	pct := func(v uint64) *float64 {
		p := float64(v) * 100 / float64(c.GetCycles())
		return &p
	}
	if c.WalkCyclesLoad != nil {
		r.WalkPctRead = pct(c.GetWalkCyclesLoad())
	}
	if c.WalkCyclesStore != nil {
		r.WalkPctWrite = pct(c.GetWalkCyclesStore())
	}
	if c.WalkCyclesRdd != nil {
		r.WalkPctRdd = pct(c.GetWalkCyclesRdd())
	}
	if c.WalkCyclesLoad != nil || c.WalkCyclesStore != nil {
		r.WalkPct = pct(c.GetWalkCyclesLoad() + c.GetWalkCyclesStore())
	}
}
