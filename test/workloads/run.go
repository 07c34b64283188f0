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
	// Storage is the workload's --storage: "" leaves every cache at the
	// level the workload's code and its library give it.
	Storage string
	// Node, when set, traces the run: the hook goes into the driver's
	// options with the node agent's socket.
	Node *Node
	// HookOptions are more of the hook library's options (after its
	// socket=, comma-separated: walk=off, walk-cpu=10, ...) for traced runs.
	HookOptions string
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
	// Instants the workload printed, in ms since the epoch (Phases).
	Marks struct {
		VMStart int64 `json:"vm_start"`
		Main    int64 `json:"main"`
		WorkEnd int64 `json:"work_end"`
		Stopped int64 `json:"stopped"`
	} `json:"phases"`
	Phases Phases `json:"-"`
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
		if rc.HookOptions != "" {
			opts += "," + rc.HookOptions // the library's options end what hook-opts prints
		}
		conf = append(conf, "spark.driver.extraJavaOptions="+opts)
	}
	argv := []string{"--master", "local[2]", "--class", "org.stratatrace.workloads.Main"}
	for _, c := range conf {
		argv = append(argv, "--conf", c)
	}
	argv = append(argv, e.Jar(), rc.Workload, "--size", rc.Size, "--work", work)
	if rc.Storage != "" {
		argv = append(argv, "--storage", rc.Storage)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(e.SparkHome, "bin", "spark-submit"), argv...)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+e.SparkHome, "SPARK_LOCAL_IP=127.0.0.1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	end := time.Now()
	wall := end.Sub(start)
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
	r.Phases = phasesOf(start, end, r.Marks.VMStart, r.Marks.Main, r.Marks.WorkEnd, r.Marks.Stopped)
	r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if rc.Node != nil {
		if r.Hook, err = sparkjob.ParseHookCounters(stderr.String()); err != nil {
			return r, fmt.Errorf("%s: %w", rc.Workload, err)
		}
	}
	return r, nil
}

// Phases split a run's wall time at the instants the workload printed:
// Launch from spark-submit's start to the driver JVM's creation (the shell
// scripts and Spark's launcher JVM), Boot from there to the workload's main
// (JVM start-up, agents, SparkSubmit), Work from main to the workload's end
// (the SparkSession's start included), Stop the SparkSession's stop, and
// Exit from there to the process's exit (the result line, shutdown hooks,
// the JVM's teardown). They add up to the wall time.
type Phases struct {
	Launch, Boot, Work, Stop, Exit time.Duration
}

// phasesOf computes Phases from a run's start and end and the workload's
// instants (ms since the epoch); zeroes when the instants are missing.
func phasesOf(start, end time.Time, vmStart, main, workEnd, stopped int64) Phases {
	if vmStart == 0 || main == 0 || workEnd == 0 || stopped == 0 {
		return Phases{}
	}
	ms := func(v int64) time.Time { return time.UnixMilli(v) }
	return Phases{
		Launch: ms(vmStart).Sub(start),
		Boot:   ms(main).Sub(ms(vmStart)),
		Work:   ms(workEnd).Sub(ms(main)),
		Stop:   ms(stopped).Sub(ms(workEnd)),
		Exit:   end.Sub(ms(stopped)),
	}
}

// Outside is the part of the wall time outside the workload's work.
func (p Phases) Outside() time.Duration { return p.Launch + p.Boot + p.Stop + p.Exit }

func (p Phases) String() string {
	return fmt.Sprintf("launch %.2f boot %.2f work %.2f stop %.2f exit %.2f s", p.Launch.Seconds(), p.Boot.Seconds(),
		p.Work.Seconds(), p.Stop.Seconds(), p.Exit.Seconds())
}
