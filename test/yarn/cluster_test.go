package yarn

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// yarnCluster is the running test cluster, as its launcher's line says.
type yarnCluster struct {
	RM           string `json:"rm"`
	RMWeb        string `json:"rm_web"`
	JHSWeb       string `json:"jhs_web"`
	HDFS         string `json:"hdfs"`
	ConfDir      string `json:"conf_dir"`
	HDFSWeb      string `json:"hdfs_web"`
	HistoryDone  string `json:"history_done"` // hdfs://…
	NodeManagers []struct {
		ID        string `json:"id"`
		LocalDirs string `json:"local_dirs"` // comma-separated
	} `json:"nodemanagers"`
	StartMs int64 `json:"start_ms"`

	script string // bin/yarncluster/yarn-cluster
	dir    string
	proc   *testenv.Proc
}

// The package's cluster, or why there is none.
var (
	cluster    *yarnCluster
	skipReason string
	startErr   error
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if os.Getenv("STRATA_YARN") == "" {
		skipReason = "skipping: the YARN tests run under make test-yarn (STRATA_YARN=1)"
		return m.Run()
	}
	script, reason := launcher()
	if reason != "" {
		skipReason = reason
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "strata-yarn-")
	if err != nil {
		startErr = err
		return m.Run()
	}
	began := time.Now()
	cluster, startErr = startCluster(script, dir)
	if startErr == nil {
		fmt.Printf("YARN cluster up in %v (%d ms from its JVM's start): RM %s, JobHistoryServer %s, %d NodeManagers, in %s\n",
			time.Since(began).Round(time.Millisecond), cluster.StartMs, cluster.RMWeb, cluster.JHSWeb, len(cluster.NodeManagers), dir)
		// spark-submit --master yarn finds the cluster here.
		os.Setenv("HADOOP_CONF_DIR", cluster.ConfDir)
	}
	code := m.Run()
	if cluster != nil {
		cluster.proc.Stop()
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Printf("YARN cluster's directory kept: %s (its log: yarncluster.log; containers' logs under target/)\n", dir)
	}
	return code
}

// launcher finds bin/yarncluster/yarn-cluster and java, or says why not.
func launcher() (string, string) {
	bin := os.Getenv("STRATA_BIN")
	if bin == "" {
		bin = filepath.Join(testenv.RepoRoot(), "bin")
	}
	script := filepath.Join(bin, "yarncluster", "yarn-cluster")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Sprintf("skipping: %s not built (run make yarncluster): %v", script, err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Sprintf("skipping: no java on PATH: %v", err)
	}
	return script, ""
}

// startCluster starts the launcher in dir and waits for its line.
func startCluster(script, dir string) (*yarnCluster, error) {
	p, err := testenv.StartProc("yarn-cluster", nil, script, "start", dir)
	if err != nil {
		return nil, err
	}
	const prefix = "YARNCLUSTER "
	var line string
	err = testenv.WaitFor("the YARN cluster's addresses", 5*time.Minute, p, func() bool {
		out := p.Output(1 << 20)
		i := strings.Index(out, prefix)
		if i < 0 {
			return false
		}
		l, _, complete := strings.Cut(out[i+len(prefix):], "\n")
		line = l
		return complete
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("%w\n%s", err, tailFile(filepath.Join(dir, "yarncluster.log"), 4000))
	}
	c := &yarnCluster{script: script, dir: dir, proc: p}
	if err := json.Unmarshal([]byte(line), c); err != nil {
		p.Stop()
		return nil, fmt.Errorf("decode the cluster's line %q: %w", line, err)
	}
	return c, nil
}

// tailFile returns the end of a file for a failure message.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// requireCluster returns the package's cluster, skipping the test when the
// cluster cannot run here and failing it when it could not start.
func requireCluster(t *testing.T) *yarnCluster {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if startErr != nil {
		t.Fatalf("start the YARN cluster: %v", startErr)
	}
	return cluster
}

// client runs a Hadoop client class against the cluster and returns its
// output; a failure fails the test.
func (c *yarnCluster) client(t *testing.T, class string, args ...string) string {
	t.Helper()
	out, err := c.run(class, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run runs a Hadoop client class and returns its output, or an error with
// the output's end.
func (c *yarnCluster) run(class string, args ...string) (string, error) {
	out, err := exec.Command(c.script, append([]string{"client", c.ConfDir, class}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", class, strings.Join(args, " "), err, sparkjob.Tail(string(out), 6000))
	}
	return string(out), nil
}

// localDirs lists every NodeManager's local directories (where YARN's
// distributed cache puts the files of a job).
func (c *yarnCluster) localDirs() []string {
	var out []string
	for _, nm := range c.NodeManagers {
		out = append(out, strings.Split(nm.LocalDirs, ",")...)
	}
	return out
}
