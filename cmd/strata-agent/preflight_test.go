package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratatrace/strata/agent/config"
)

// TestDefaultCPUPolicy: the agent runs under SCHED_BATCH at nice 10 unless
// told otherwise.
func TestDefaultCPUPolicy(t *testing.T) {
	if cfg := config.Default(); cfg.CPUPolicy != config.CPUBatch || cfg.Nice != 10 {
		t.Errorf("default cpu policy %q nice %d, want %q at 10", cfg.CPUPolicy, cfg.Nice, config.CPUBatch)
	}
}

// installHook copies both hook files and replaces older copies; a missing
// file is an error naming it.
func TestInstallHook(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "jvmhook")
	for _, f := range hookFiles {
		os.WriteFile(filepath.Join(src, f), []byte("v2 "+f), 0o600)
	}
	os.MkdirAll(dst, 0o755)
	os.WriteFile(filepath.Join(dst, hookFiles[0]), []byte("v1"), 0o644)
	if err := installHook(src, dst); err != nil {
		t.Fatal(err)
	}
	for _, f := range hookFiles {
		b, err := os.ReadFile(filepath.Join(dst, f))
		st, _ := os.Stat(filepath.Join(dst, f))
		if err != nil || string(b) != "v2 "+f || st.Mode().Perm() != 0o644 {
			t.Errorf("%s = %q (%v), mode %v", f, b, err, st.Mode())
		}
	}
	os.Remove(filepath.Join(src, hookFiles[1]))
	if err := installHook(src, dst); err == nil || !strings.Contains(err.Error(), hookFiles[1]) {
		t.Fatalf("missing source file: %v", err)
	}
}
