package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/stratatrace/strata/collector/answer"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// The sampled faults (FAULT records without counters, dialect.sampleRuns):
// a sample record holds the one page the fault got, resolved right after
// it. Hot ranks pages by samples; FaultNodes splits the samples in cached
// blocks by where the page was; the physical map marks its buckets with
// them (hotSamples).

// countIf counts the rows where cond holds.
func countIf(cond string) string { return "sum(CASE WHEN " + cond + " THEN 1 ELSE 0 END)" }

// Hot ranks an app's pages by sampled faults, most first (ties: by pid and
// address); a page's PFN, node and flags are those of its latest sample.
func (q *querier) Hot(ctx context.Context, hq answer.HotQuery) ([]*stratav1.HotPage, error) {
	if err := q.check(hq.AppID); err != nil {
		return nil, fmt.Errorf("hot: %w", err)
	}
	d := q.src
	where := ""
	if hq.RDD != nil {
		where = " WHERE rdd_id = " + itoa(*hq.RDD)
	}
	am := d.argMax()
	sel := d.sel(`executor_id, pid, rdd_id, partition_id, block_id, hook_block_id, mem_mode, mem_location, vaddr,
	count(*) AS samples, `+countIf("fault_kind = "+itoa(int8(stratav1.FaultKind_FAULT_KIND_READ)))+`,
	`+countIf("fault_kind = "+itoa(int8(stratav1.FaultKind_FAULT_KIND_WRITE)))+`,
	`+am+`(pfn, time_ns), `+am+`(numa_node, time_ns), `+am+`(kpageflags, time_ns),
	`+countIf("cpu_numa >= 0 AND numa_node >= 0 AND numa_node != cpu_numa")) + `
FROM ` + d.sampleRuns(hq.AppID) + where + `
GROUP BY executor_id, pid, rdd_id, partition_id, block_id, hook_block_id, mem_mode, mem_location, vaddr
ORDER BY samples DESC, pid, vaddr`
	if hq.Limit > 0 {
		sel += " LIMIT " + strconv.FormatUint(uint64(hq.Limit), 10)
	}
	var out []*stratav1.HotPage
	err := q.each(ctx, sel, func(r row) {
		p := &stratav1.HotPage{Block: &stratav1.SparkBlock{AppId: hq.AppID}}
		b := p.Block
		b.ExecutorId, p.Pid, b.RddId, b.Partition, b.BlockId, b.HookBlockId = r.str(), r.u32(), r.i32(), r.i32(), r.str(), r.u64()
		b.Mode, b.Location, p.Vaddr = stratav1.MemoryMode(r.i8()), stratav1.MemoryLocation(r.i8()), r.u64()
		p.Samples, p.Reads, p.Writes = r.u64(), r.u64(), r.u64()
		p.Pfn, p.NumaNode, p.Kpageflags, p.CrossNode = r.u64(), r.i32(), r.u64(), r.u64()
		out = append(out, p)
	})
	if err != nil {
		return nil, fmt.Errorf("query hot %s: %w", hq.AppID, err)
	}
	return out, nil
}

// FaultNodes counts the sampled faults in an app's cached blocks by where
// the faulted page was: on the faulting CPU's node (local), or elsewhere —
// by node numbers, or by the agent's CROSS_NODE mark (remote).
func (q *querier) FaultNodes(ctx context.Context, appID string) (local, remote uint64, err error) {
	if err := q.check(appID); err != nil {
		return 0, 0, fmt.Errorf("fault nodes: %w", err)
	}
	d := q.src
	cross := stateBit(d, pgCrossNode)
	sel := d.sel(`sum(CASE WHEN `+cross+` = 0 AND numa_node >= 0 AND numa_node = cpu_numa THEN pages ELSE 0 END),
	sum(CASE WHEN `+cross+` != 0 OR (numa_node >= 0 AND cpu_numa >= 0 AND numa_node != cpu_numa) THEN pages ELSE 0 END)`) + `
FROM ` + d.sampleRuns(appID) + ` WHERE ` + cachedCond + ` AND ` + stateBit(d, pgPresent) + ` != 0 AND ` +
		stateBit(d, pgHidden) + ` = 0`
	err = q.each(ctx, sel, func(r row) { local, remote = r.u64(), r.u64() })
	if err != nil {
		return 0, 0, fmt.Errorf("query fault nodes %s: %w", appID, err)
	}
	return local, remote, nil
}

// hotSamples counts app's sampled faults on machine per PFN in [from, to):
// those up to the moment at (unix nanoseconds), or with 0 every one.
func (q *querier) hotSamples(ctx context.Context, app, machine string, from, to uint64, at int64) (map[uint64]uint64, error) {
	d := q.src
	upTo := ""
	if at != 0 {
		upTo = ` AND time_ns <= ` + strconv.FormatInt(at, 10)
	}
	sel := d.sel("pfn, count(*)") + ` FROM ` + d.sampleRuns(app) + ` WHERE node_name = ` + d.lit(machine) +
		` AND ` + stateBit(d, pgPresent) + ` != 0 AND ` + stateBit(d, pgHidden) + ` = 0` +
		` AND pfn >= ` + strconv.FormatUint(from, 10) + ` AND pfn < ` + strconv.FormatUint(to, 10) + upTo + ` GROUP BY pfn`
	out := map[uint64]uint64{}
	err := q.each(ctx, sel, func(r row) {
		pfn, n := r.u64(), r.u64()
		out[pfn] = n
	})
	return out, err
}
