// Package testenv holds the privilege, kernel and sample-data gates that
// Strata's tests share, so that no test file repeats them, and the process
// harness of the tests that start real binaries and daemons (Proc: its own
// process group, kept output, CPU time; WaitFor, FreePort, Listening). A
// gate that skips always says why.
//
// What callers must know: a Proc started with StartProc is the caller's to
// Stop; Daemon stops it at the test's cleanup. A killed test process leaves
// its daemons running, as any harness would.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

// SparkHome returns the SPARK_HOME of the installed Spark series ("3.5" or
// "4"), as `make -s spark-home SPARK=series` prints it, skipping the test
// when that Spark is not installed (make deps installs it).
func SparkHome(tb testing.TB, series string) string {
	tb.Helper()
	out, err := exec.Command("make", "-s", "-C", RepoRoot(), "spark-home", "SPARK="+series).Output()
	if err != nil {
		tb.Skipf("skipping: Spark %s not installed (run make deps): %v", series, err)
	}
	return strings.TrimSpace(string(out))
}

// Built returns the path of a file make build puts under bin/ ($STRATA_BIN
// when set), e.g. "jvmhook/strata-hook.jar", skipping the test when it is
// missing.
func Built(tb testing.TB, rel string) string {
	tb.Helper()
	dir := os.Getenv("STRATA_BIN")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "bin")
	}
	p := filepath.Join(dir, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("skipping: %s not built (run make build): %v", p, err)
	}
	return p
}

// RequireJava skips the test unless java is on PATH.
func RequireJava(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		tb.Skipf("skipping: no java on PATH: %v", err)
	}
}

// Chromium returns the path of Debian's headless-capable Chromium
// ($STRATA_CHROMIUM, else chromium on PATH; make deps installs it),
// skipping the test when it is missing.
func Chromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("STRATA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tb.Skip("skipping: no chromium on PATH (make deps installs Debian's chromium; or set STRATA_CHROMIUM)")
	return ""
}
