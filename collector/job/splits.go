package job

// SplitBuckets is the number of progress buckets Hadoop records per attempt.
const SplitBuckets = 12

// ProgressSplits are an attempt's progress splits (rumen "clockSplits",
// "cpuUsages", "vmemKbytes", "physMemKbytes"; jhist attempt events). Bucket
// i covers task progress [i/12, (i+1)/12). Each series has SplitBuckets
// entries, or is empty when the source lacks it.
type ProgressSplits struct {
	// ClockSplits[i] is the wall-clock ms spent in bucket i (increment; the
	// sum is the attempt's run time).
	ClockSplits []int64
	// CPUUsages[i] is the CPU ms used in bucket i (increment; the sum is the
	// attempt's CPU time).
	CPUUsages []int64
	// VmemKbytes[i] is the virtual memory size (KiB) observed in bucket i.
	VmemKbytes []int64
	// PhysMemKbytes[i] is the resident memory size (KiB) observed in bucket i.
	PhysMemKbytes []int64
}

// PeakMemory returns the largest physical and virtual memory (bytes) seen in
// any bucket, and false when neither series has a positive value. Heuristics
// and metrics use it where PHYSICAL_MEMORY_BYTES / VIRTUAL_MEMORY_BYTES
// counters are missing.
func (s *ProgressSplits) PeakMemory() (physBytes, vmemBytes int64, ok bool) {
	if s == nil {
		return 0, 0, false
	}
	p, v := maxOf(s.PhysMemKbytes), maxOf(s.VmemKbytes)
	if p <= 0 && v <= 0 {
		return 0, 0, false
	}
	return max(p, 0) * 1024, max(v, 0) * 1024, true
}

// TotalCPUMs returns the sum of CPUUsages (ms).
func (s *ProgressSplits) TotalCPUMs() int64 { return sumOf(s.cpu()) }

// TotalClockMs returns the sum of ClockSplits (ms).
func (s *ProgressSplits) TotalClockMs() int64 { return sumOf(s.clock()) }

func (s *ProgressSplits) cpu() []int64 {
	if s == nil {
		return nil
	}
	return s.CPUUsages
}

func (s *ProgressSplits) clock() []int64 {
	if s == nil {
		return nil
	}
	return s.ClockSplits
}

func maxOf(xs []int64) int64 {
	var m int64
	for i, x := range xs {
		if i == 0 || x > m {
			m = x
		}
	}
	return m
}

func sumOf(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// PeakMemory returns the task's peak physical and virtual memory (bytes):
// the PHYSICAL_MEMORY_BYTES / VIRTUAL_MEMORY_BYTES counters when present,
// otherwise the peak of the analysed attempt's progress splits. ok is false
// when neither source is available.
func (t *Task) PeakMemory() (physBytes, vmemBytes int64, ok bool) {
	if t.Counters.Has(PhysicalMemoryBytes) || t.Counters.Has(VirtualMemoryBytes) {
		return t.Counters.Get(PhysicalMemoryBytes), t.Counters.Get(VirtualMemoryBytes), true
	}
	if a := t.AnalyzedAttempt(); a != nil {
		return a.Splits.PeakMemory()
	}
	return 0, 0, false
}
