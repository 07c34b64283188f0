package fetcher

import "github.com/stratatrace/strata/collector/job"

// Progress splits. Hadoop samples every task attempt into job.SplitBuckets
// buckets of task progress. Wall clock and CPU time are cumulative counters:
// a bucket holds the increment observed while progress was inside it, so a
// series sums to the attempt's total. Virtual and physical memory are state
// values: a bucket holds the memory size observed in it. When progress jumps
// over buckets between two samples, the writer interpolates the skipped
// buckets; some writers instead leave them 0 (or -1 for "unknown").
//
// splitsFrom normalises what a source carries into that shape:
//   - a series of another length is resampled onto job.SplitBuckets buckets
//     (cumulative series by redistributing the running total, state series
//     by sampling the bucket that covers the same progress);
//   - negative entries (unknown) of a cumulative series become 0;
//   - non-positive entries of a state series lying between two positive ones
//     are interpolated linearly (the writer skipped them); leading and
//     trailing ones stay as they are (nothing was observed there).
//
// It returns nil when every series is empty. The series passed in may be
// modified and kept.
func splitsFrom(clock, cpu, vmem, phys []int64) *job.ProgressSplits {
	if len(clock) == 0 && len(cpu) == 0 && len(vmem) == 0 && len(phys) == 0 {
		return nil
	}
	return &job.ProgressSplits{
		ClockSplits:   cumulativeSeries(clock),
		CPUUsages:     cumulativeSeries(cpu),
		VmemKbytes:    stateSeries(vmem),
		PhysMemKbytes: stateSeries(phys),
	}
}

// cumulativeSeries normalises a per-bucket increment series. It may
// reuse in's storage.
func cumulativeSeries(in []int64) []int64 {
	if len(in) == 0 {
		return nil
	}
	src := in
	for i, v := range in {
		src[i] = max(v, 0)
	}
	if len(src) == job.SplitBuckets {
		return src
	}
	// Resample: running total at progress p, linear inside a source bucket.
	total := make([]int64, len(src)+1)
	for i, v := range src {
		total[i+1] = total[i] + v
	}
	at := func(p float64) float64 {
		x := p * float64(len(src))
		i := int(x)
		if i >= len(src) {
			return float64(total[len(src)])
		}
		return float64(total[i]) + (x-float64(i))*float64(src[i])
	}
	out := make([]int64, job.SplitBuckets)
	prev := int64(0)
	for b := range out {
		cur := int64(at(float64(b+1)/job.SplitBuckets) + 0.5)
		out[b] = cur - prev
		prev = cur
	}
	return out
}

// stateSeries normalises a per-bucket state series. It may reuse in's
// storage.
func stateSeries(in []int64) []int64 {
	if len(in) == 0 {
		return nil
	}
	src := in
	fillGaps(src)
	if len(src) == job.SplitBuckets {
		return src
	}
	out := make([]int64, job.SplitBuckets)
	for b := range out {
		mid := (float64(b) + 0.5) / job.SplitBuckets
		out[b] = src[min(int(mid*float64(len(src))), len(src)-1)]
	}
	return out
}

// fillGaps interpolates runs of non-positive values enclosed by positive
// values.
func fillGaps(s []int64) {
	last := -1 // index of the last positive value
	for i, v := range s {
		if v <= 0 {
			continue
		}
		if last >= 0 && i-last > 1 {
			a, b := float64(s[last]), float64(v)
			for k := last + 1; k < i; k++ {
				f := float64(k-last) / float64(i-last)
				s[k] = int64(a + (b-a)*f + 0.5)
			}
		}
		last = i
	}
}
