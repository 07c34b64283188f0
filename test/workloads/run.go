package workloads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/stratatrace/strata/test/sparkjob"
)

// RunConfig is one run of one workload.
type RunConfig struct {
	Workload string
	Size     string // small, medium, large; "" = small
	// Node, when set, traces the run: the hook goes into the driver's
	// options with the node agent's socket.
	Node *Node
	// EventLogDir receives the run's Spark event log (with block updates,
	// which say each cached block's size).
	EventLogDir string
	// Timeout bounds the run; 0 = 10 minutes.
	Timeout time.Duration
}

// Result is what a run printed and how long it took.
type Result struct {
	Workload string         `json:"workload"`
	App      string         `json:"app"`
	Spark    string         `json:"spark"`
	PID      int            `json:"pid"`
	Size     string         `json:"size"`
	Storage  string         `json:"storage"`
	SparkMs  int64          `json:"ms"`
	Output   map[string]any `json:"result"`
	// Wall is the spark-submit process's time, start to exit; CPU is the
	// CPU time (user + system) of that process and of the children it
	// waited for (Spark's launcher).
	Wall time.Duration `json:"-"`
	CPU  time.Duration `json:"-"`
	// Hook is the hook's exit line counters (sent, dropped, ...) of a
	// traced run; nil when untraced.
	Hook map[string]int64 `json:"-"`
}

// Run runs one workload in local[2] and returns its result line.
func Run(ctx context.Context, e Env, rc RunConfig) (Result, error) {
	if rc.Size == "" {
		rc.Size = "small"
	}
	if rc.Timeout == 0 {
		rc.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, rc.Timeout)
	defer cancel()
	work := filepath.Join(e.Work, "scratch")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return Result{}, fmt.Errorf("create scratch dir: %w", err)
	}
	conf := []string{
		"spark.ui.enabled=false",
		"spark.ui.showConsoleProgress=false",
		"spark.driver.memory=1g",
	}
	if rc.EventLogDir != "" {
		conf = append(conf, "spark.eventLog.enabled=true", "spark.eventLog.dir=file://"+rc.EventLogDir,
			"spark.eventLog.logBlockUpdates.enabled=true")
	}
	if rc.Node != nil {
		opts, err := e.HookOpts(rc.Node.Socket)
		if err != nil {
			return Result{}, err
		}
		conf = append(conf, "spark.driver.extraJavaOptions="+opts)
	}
	argv := []string{"--master", "local[2]", "--class", "org.stratatrace.workloads.Main"}
	for _, c := range conf {
		argv = append(argv, "--conf", c)
	}
	argv = append(argv, e.Jar(), rc.Workload, "--size", rc.Size, "--work", work)
	cmd := exec.CommandContext(ctx, filepath.Join(e.SparkHome, "bin", "spark-submit"), argv...)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+e.SparkHome, "SPARK_LOCAL_IP=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return Result{}, fmt.Errorf("run %s on Spark %s: %w\n%s", rc.Workload, e.SparkVersion(), err, sparkjob.Tail(stderr.String(), 6000))
	}
	var r Result
	found := false
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Bytes(); bytes.HasPrefix(line, []byte(`{"workload"`)) {
			if err := json.Unmarshal(line, &r); err != nil {
				return Result{}, fmt.Errorf("decode %s's result %q: %w", rc.Workload, line, err)
			}
			found = true
		}
	}
	if !found {
		return Result{}, fmt.Errorf("%s printed no result line\n%s", rc.Workload, sparkjob.Tail(stderr.String(), 6000))
	}
	r.Wall = wall
	r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if rc.Node != nil {
		if r.Hook, err = sparkjob.ParseHookCounters(stderr.String()); err != nil {
			return r, fmt.Errorf("%s: %w", rc.Workload, err)
		}
	}
	return r, nil
}
