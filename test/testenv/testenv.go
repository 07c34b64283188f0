// Package testenv holds the privilege, kernel and sample-data gates that
// Strata's tests share, so that no test file repeats them. A gate that skips
// always says why.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RequireRoot skips the test unless it runs as root (CI does).
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skipf("skipping: needs root for PFNs, kpageflags and BPF (euid %d)", os.Geteuid())
	}
}

// RepoRoot returns the module root, found from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Samples returns the directory of third-party sample inputs
// ($STRATA_SAMPLES, default ../shared/data beside the repository), skipping
// the test with the reason when it is absent.
func Samples(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("STRATA_SAMPLES")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared", "data")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		tb.Skipf("skipping: sample data not found at %s (set STRATA_SAMPLES)", dir)
	}
	return dir
}
