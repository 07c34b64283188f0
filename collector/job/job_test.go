package job

import "testing"

func TestTaskTimes(t *testing.T) {
	tests := []struct {
		name string
		task Task
		want Times
		ok   bool
	}{
		{"no attempt", Task{Kind: MapTask}, Times{}, false},
		{"map", Task{Kind: MapTask, Analyzed: "a", Attempts: []Attempt{{ID: "a", StartMs: 10, FinishMs: 110}}},
			Times{TotalMs: 100, StartMs: 10, FinishMs: 110}, true},
		{"reduce", Task{Kind: ReduceTask, Analyzed: "b", Attempts: []Attempt{{ID: "a"}, {ID: "b", StartMs: 10, ShuffleFinishMs: 40, SortFinishMs: 50, FinishMs: 110}}},
			Times{TotalMs: 100, ShuffleMs: 30, SortMs: 10, StartMs: 10, FinishMs: 110}, true},
		{"missing analysed", Task{Kind: MapTask, Analyzed: "x", Attempts: []Attempt{{ID: "a"}}}, Times{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.task.Times()
			if got != tt.want || ok != tt.ok {
				t.Fatalf("Times() = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if tt.ok && got.CodeMs() != 60 && tt.task.Kind == ReduceTask {
				t.Fatalf("CodeMs() = %d, want 60", got.CodeMs())
			}
		})
	}
}

func TestPeakMemory(t *testing.T) {
	splits := &ProgressSplits{
		PhysMemKbytes: []int64{100, 300, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		VmemKbytes:    []int64{1000, 3000, 5000, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		CPUUsages:     []int64{1, 2, 3},
		ClockSplits:   []int64{10, 20},
	}
	tests := []struct {
		name       string
		task       Task
		phys, vmem int64
		ok         bool
	}{
		{"counters win", Task{Counters: Counters{PhysicalMemoryBytes: 7}, Analyzed: "a", Attempts: []Attempt{{ID: "a", Splits: splits}}}, 7, 0, true},
		{"splits fallback", Task{Counters: Counters{}, Analyzed: "a", Attempts: []Attempt{{ID: "a", Splits: splits}}}, 300 * 1024, 5000 * 1024, true},
		{"nothing", Task{Analyzed: "a", Attempts: []Attempt{{ID: "a"}}}, 0, 0, false},
		{"zero splits", Task{Analyzed: "a", Attempts: []Attempt{{ID: "a", Splits: &ProgressSplits{PhysMemKbytes: make([]int64, 12)}}}}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, v, ok := tt.task.PeakMemory()
			if p != tt.phys || v != tt.vmem || ok != tt.ok {
				t.Fatalf("PeakMemory() = %d, %d, %v; want %d, %d, %v", p, v, ok, tt.phys, tt.vmem, tt.ok)
			}
		})
	}
	if splits.TotalCPUMs() != 6 || splits.TotalClockMs() != 30 {
		t.Fatalf("totals = %d, %d", splits.TotalCPUMs(), splits.TotalClockMs())
	}
	var nilSplits *ProgressSplits
	if nilSplits.TotalCPUMs() != 0 {
		t.Fatal("nil splits should total 0")
	}
}
