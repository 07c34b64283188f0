package heuristics

import "testing"

func TestRemoteFaults(t *testing.T) {
	h := &RemoteFaults{share: remoteFaults.of(defaults(t)).RemoteShareSeverity, minFaults: 1000}
	for _, tc := range []struct {
		name string
		f    *FaultShare
		sev  Severity
		skip bool
	}{
		{"local", &FaultShare{Local: 10_000}, None, false},
		{"10 %", &FaultShare{Local: 9_000, Remote: 1_000}, Low, false},
		{"half remote", &FaultShare{Local: 5_000, Remote: 5_000}, Critical, false},
		{"30 %", &FaultShare{Local: 7_000, Remote: 3_000}, Moderate, false},
		{"too few", &FaultShare{Local: 10, Remote: 10}, None, true},
		{"not traced", nil, None, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.ApplyTrace(nil, &TraceSummary{Faults: tc.f})
			if r.Skip != tc.skip || (!tc.skip && (r.Severity != tc.sev || r.Score != 0)) {
				t.Fatalf("got %+v, want %v skip %v", r, tc.sev, tc.skip)
			}
		})
	}
}
