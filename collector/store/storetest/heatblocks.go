package storetest

import stratav1 "github.com/stratatrace/strata/proto/strata/v1"

// HeatBatches are HeatBatch(1) and a batch with one more own sample:
// rdd_7_1 (executor 1, pid 100, partition 1) at T0+20s, 3 GiB covered at
// access rate 0.8 sampled every 200 ms (4 accesses per second per GiB),
// nothing cold. RDD 7's latest figures are then 2.9 accesses per second
// per GiB and 1 of its 5 monitored GiB cold for at least a minute.
func HeatBatches() []*stratav1.Batch {
	more := &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: 2, Heat: []*stratav1.HeatSample{{
		AppId: App, ExecutorId: "1", Pid: 100, RddId: 7, Partition: 1, BlockId: "rdd_7_1", HookBlockId: 13,
		TimeUnixNano: T0 + 20e9, IntervalNs: 4e9, SampleIntervalNs: 2e8, ResolvedBytes: 3 * gib, MonitoredBytes: u64p(3 * gib),
		CoveredBytes: 3 * gib, AccessRate: f64p(0.8), SourceKind: stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN, Source: HeatOwn}}}
	return []*stratav1.Batch{HeatBatch(1), more}
}
