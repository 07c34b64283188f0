package hooksrv

import (
	"testing"

	"github.com/stratatrace/strata/agent/procmem"
)

// TestPIDPolicyFixture runs the pid checks against the fixture /proc
// (Config.FS, the agent's --proc): a containerised JVM 4242 (pid 1 inside
// its namespace) with a thread 4250, and an unrelated process 5000.
func TestPIDPolicyFixture(t *testing.T) {
	p := newPIDPolicy(procmem.FS{Proc: "testdata/proc", Sys: "/sys"}, 4242)
	if p.nsPID != 1 {
		t.Fatalf("namespace pid %d, want 1 (the last NSpid field)", p.nsPID)
	}
	for _, tc := range []struct {
		name string
		pid  uint32
		own  bool
	}{
		{"the peer", 4242, true},
		{"the peer inside its namespace", 1, true},
		{"a thread of the peer", 4250, true},
		{"the thread again (cached)", 4250, true},
		{"another process", 5000, false},
		{"a pid the fixture lacks", 4243, false},
		{"pid 0", 0, false},
	} {
		if got := p.owns(tc.pid); got != tc.own {
			t.Errorf("%s: owns(%d) = %v, want %v", tc.name, tc.pid, got, tc.own)
		}
	}
	if !p.threads[4250] || len(p.threads) != 1 {
		t.Errorf("verified threads %v, want just 4250", p.threads)
	}
}
