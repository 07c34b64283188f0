package workloads

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Names are the eight workloads, in the order of SMTT's figures.
var Names = []string{"LogisticRegression", "SVM", "ALS", "PageRank", "SVDPlusPlus", "TriangleCount", "RDDRelation", "PageViewStream"}

// Env says where the built files and the Spark installation are.
type Env struct {
	// Bin is make build's output: strata binaries, bin/jvmhook,
	// bin/workloads.
	Bin string
	// SparkHome is an installed Spark (make -s spark-home SPARK=…).
	SparkHome string
	// Work is a scratch directory the caller owns (stores, logs, spools).
	Work string
}

// SparkVersion is the installed Spark's version, from its directory name
// (spark-3.5.9).
func (e Env) SparkVersion() string {
	return strings.TrimPrefix(filepath.Base(e.SparkHome), "spark-")
}

// Jar is the workloads jar built against this Spark.
func (e Env) Jar() string {
	return filepath.Join(e.Bin, "workloads", "workloads-"+e.SparkVersion()+".jar")
}

// Check reports what is missing to run workloads in e.
func (e Env) Check() error {
	for _, f := range []string{e.Jar(), filepath.Join(e.Bin, "strata"), filepath.Join(e.Bin, "strata-agent"),
		filepath.Join(e.Bin, "strata-collector"), filepath.Join(e.Bin, "jvmhook", "strata-hook.jar"),
		filepath.Join(e.SparkHome, "bin", "spark-submit")} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("check environment: %w (run make deps build)", err)
		}
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("check environment: %w", err)
	}
	return nil
}

// SparkHomeOf asks make for the SPARK_HOME of a Spark series ("3.5", "4")
// from the repository at root.
func SparkHomeOf(root, series string) (string, error) {
	out, err := exec.Command("make", "-s", "-C", root, "spark-home", "SPARK="+series).Output()
	if err != nil {
		return "", fmt.Errorf("find Spark %s: %w (run make deps)", series, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// HookOpts is what `strata hook-opts` prints for the built hook and socket.
func (e Env) HookOpts(socket string) (string, error) {
	out, err := exec.Command(filepath.Join(e.Bin, "strata"), "hook-opts", "--install-hook", filepath.Join(e.Bin, "jvmhook"),
		"--hook-socket", socket).Output()
	if err != nil {
		return "", fmt.Errorf("strata hook-opts: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
