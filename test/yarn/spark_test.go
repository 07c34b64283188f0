package yarn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// TestSparkOnYarn runs StrataJob on YARN, two executors in two
// NodeManager containers with the hook, against the real agent and
// collector: on Spark 3.5 in client mode once with the hook files
// installed on the node and once with them shipped by the job, then reads
// both applications back through a Spark History Server; in cluster mode
// with the installed files; and on Spark 4 in client mode with the
// installed files.
func TestSparkOnYarn(t *testing.T) {
	c := requireCluster(t)
	testenv.RequireRoot(t)
	home := testenv.SparkHome(t, "3.5")
	n := startNode(t)
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	lib := filepath.Join(filepath.Dir(jar), "libstratahook.so")
	// The client-mode runs' event logs, for the Spark History Server.
	events := t.TempDir()
	eventLog := []string{"spark.eventLog.enabled=true", "spark.eventLog.dir=file://" + events}
	var apps []string

	t.Run("installed", func(t *testing.T) {
		// The absolute paths of bin/jvmhook, as strata hook-opts prints them.
		hook := []string{"spark.executor.extraJavaOptions=" + sparkjob.HookOpts(t, n.socket)}
		apps = append(apps, runSpark(t, c, n, home, append(hook, eventLog...), lib))
	})
	t.Run("shipped", func(t *testing.T) {
		// Copies of the files in a folder of their own, shipped through
		// YARN's distributed cache into each container's working directory
		// with the arguments `strata hook-opts --ship` prints: the options
		// name no folder but the container's own (./libstratahook.so).
		ship := t.TempDir()
		for _, f := range []string{jar, lib} {
			copyFile(t, f, filepath.Join(ship, filepath.Base(f)))
		}
		out, err := exec.Command(testenv.Built(t, "strata"), "hook-opts", "--ship", "--master", "yarn", "--install-hook", ship, "--hook-socket", n.socket).Output()
		if err != nil {
			t.Fatalf("strata hook-opts --ship: %v", err)
		}
		args := strings.Fields(string(out))
		var confs []string
		for i := 0; i+1 < len(args); i += 2 {
			if args[i] != "--conf" {
				t.Fatalf("hook-opts --ship printed %q", out)
			}
			confs = append(confs, args[i+1])
		}
		if len(confs) != 2 || strings.Contains(confs[1], ship) {
			t.Fatalf("hook-opts --ship printed %q: want the files shipped and options naming no folder of this host", out)
		}
		apps = append(apps, runSpark(t, c, n, home, append(confs, eventLog...), ""))
	})
	t.Run("history server", func(t *testing.T) {
		if len(apps) == 0 {
			t.Skip("skipping: no client-mode run finished")
		}
		checkSparkHistory(t, home, events, apps)
	})
	t.Run("cluster", func(t *testing.T) {
		// The driver in the application master's container: its first step
		// line is in that container's stdout, and it waits there for good
		// (a container's stdin never ends), so the test kills it.
		runClusterMode(t, c, n, home, lib)
	})
	t.Run("spark 4", func(t *testing.T) {
		// Spark 4's own Hadoop client (3.5) against the cluster's 3.3.6
		// servers, the hook files installed, client mode.
		home4 := testenv.SparkHome(t, "4")
		runSpark(t, c, n, home4, []string{"spark.executor.extraJavaOptions=" + sparkjob.HookOpts(t, n.socket)}, lib)
	})
}

// executor is one executor JVM as its container shows it.
type executor struct {
	id, container string
	pid           uint32
}

// jobConf is the job's Spark settings on the cluster, without the hook.
func jobConf(t *testing.T, home string) []string {
	return []string{
		"spark.executor.instances=2", "spark.executor.cores=1", "spark.executor.memory=512m",
		// What YARN adds to each executor's container anyway (at least 384
		// MiB), said so that Spark Configuration reads it.
		"spark.executor.memoryOverhead=384m",
		"spark.driver.memory=512m", "spark.yarn.am.memory=256m",
		// Both executors registered before the first task: each gets blocks.
		"spark.scheduler.minRegisteredResourcesRatio=1.0",
		// Spark's jars are on the node: nothing to upload.
		"spark.yarn.jars=local:" + filepath.Join(home, "jars") + "/*",
		"spark.ui.port=" + strings.TrimPrefix(listenAddr(t), "127.0.0.1:"), "spark.ui.showConsoleProgress=false",
		"spark.rdd.compress=false", "spark.sql.shuffle.partitions=2", "spark.sql.adaptive.enabled=false",
		"spark.buffer.pageSize=1m",
	}
}

// jobFlags are StrataJob's: four partitions of 1 MiB per stamped RDD.
var jobFlags = []string{"--parts", "4", "--records", "8", "--record", "131072", "--evict-mb", "4"}

// runClusterMode submits the job in cluster mode with the hook installed,
// reads the driver's "cached" step from its container's stdout, checks
// the blocks as runSpark does and kills the application.
func runClusterMode(t *testing.T, c *yarnCluster, n *strataNode, home, lib string) {
	began := time.Now()
	args := []string{"--master", "yarn", "--deploy-mode", "cluster", "--class", "org.stratatrace.sparkjob.StrataJob"}
	conf := append(jobConf(t, home),
		"spark.executor.extraJavaOptions="+sparkjob.HookOpts(t, n.socket),
		// The driver's UI on loopback, where YARN's filter in front of it
		// lets requests through (it sends others to the ResourceManager's
		// proxy).
		"spark.yarn.appMasterEnv.SPARK_LOCAL_IP=127.0.0.1",
		"spark.yarn.submit.waitAppCompletion=false")
	for _, kv := range conf {
		args = append(args, "--conf", kv)
	}
	args = append(append(args, sparkjob.Jar(t, home)), jobFlags...)
	cmd := exec.Command(filepath.Join(home, "bin", "spark-submit"), args...)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Submitted application (application_\d+_\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("spark-submit --deploy-mode cluster: %v\n%s", err, sparkjob.Tail(string(out), 4000))
	}
	app := string(m[1])
	t.Cleanup(func() {
		if _, err := c.run("org.apache.hadoop.yarn.client.cli.ApplicationCLI", "application", "-kill", app); err != nil {
			t.Errorf("kill %s: %v", app, err)
		}
	})

	var s sparkjob.Step
	eventually(t, app+"'s driver at its cached step", 5*time.Minute, func() error {
		var at struct {
			AppAttempts struct {
				AppAttempt []struct {
					ContainerID     string `json:"containerId"`
					NodeHTTPAddress string `json:"nodeHttpAddress"`
				} `json:"appAttempt"`
			} `json:"appAttempts"`
		}
		if err := getJSON(c.RMWeb+"/ws/v1/cluster/apps/"+app+"/appattempts", &at); err != nil {
			return err
		}
		if len(at.AppAttempts.AppAttempt) == 0 {
			return fmt.Errorf("no attempt yet")
		}
		a := at.AppAttempts.AppAttempt[len(at.AppAttempts.AppAttempt)-1]
		log, err := getText(fmt.Sprintf("http://%s/ws/v1/node/containerlogs/%s/stdout", a.NodeHTTPAddress, a.ContainerID))
		if err != nil {
			return err
		}
		for _, l := range strings.Split(log, "\n") {
			if json.Unmarshal([]byte(l), &s) == nil && s.Step == "cached" {
				return nil
			}
		}
		return fmt.Errorf("no cached step in the driver's stdout yet")
	})
	if s.App != app {
		t.Fatalf("the driver says application %q, YARN %q", s.App, app)
	}
	t.Logf("%s cached after %v; driver UI %s", app, time.Since(began).Round(time.Millisecond), s.UI)
	// The driver is the application master's container (the first).
	if id := containerOf(t, uint32(s.PID)); !strings.HasSuffix(id, "_000001") || !strings.Contains(id, strings.TrimPrefix(app, "application")) {
		t.Errorf("driver (pid %d) in container %q, want %s's application master", s.PID, id, app)
	}
	execs := checkBlocks(t, n, s)
	checkContainers(t, c, app, execs, lib)
}

// getText returns the body of a GET.
func getText(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}

// runSpark submits the job with the settings that put the hook into the
// executors and checks the cached blocks against Spark, strata and the
// executors' memory. lib, when set, is the library every executor must
// map; else it must come from a NodeManager's local directories (the job
// shipped it). It returns the application's id once YARN says it
// succeeded.
func runSpark(t *testing.T, c *yarnCluster, n *strataNode, home string, hook []string, lib string) string {
	began := time.Now()
	conf := append(append(jobConf(t, home), "spark.submit.deployMode=client"), hook...)
	j := sparkjob.Start(t, home, "yarn", conf, jobFlags...)
	s := j.Next(t, "cached")
	if !strings.HasPrefix(s.App, "application_") {
		t.Fatalf("application id %q: not a YARN application", s.App)
	}
	t.Logf("%s cached after %v", s.App, time.Since(began).Round(time.Millisecond))

	execs := checkBlocks(t, n, s)
	checkContainers(t, c, s.App, execs, lib)

	for _, step := range []string{"gc", "unpersisted", "evicted"} {
		j.Proceed(t)
		j.Next(t, step)
	}
	j.Proceed(t)
	j.Finish(t)
	var app struct {
		App struct {
			State       string `json:"state"`
			FinalStatus string `json:"finalStatus"`
		} `json:"app"`
	}
	eventually(t, "YARN says the application succeeded", 60*time.Second, func() error {
		if err := getJSON(c.RMWeb+"/ws/v1/cluster/apps/"+s.App, &app); err != nil {
			return err
		}
		if app.App.State != "FINISHED" || app.App.FinalStatus != "SUCCEEDED" {
			return fmt.Errorf("state %s, final status %s", app.App.State, app.App.FinalStatus)
		}
		return nil
	})
	t.Logf("%s: %d executors, done after %v", s.App, len(execs), time.Since(began).Round(time.Millisecond))
	return s.App
}

// sparkRDD is Spark's REST view of a cached RDD (the fields used here).
type sparkRDD struct {
	Partitions []struct {
		BlockName  string   `json:"blockName"`
		MemoryUsed int64    `json:"memoryUsed"`
		Executors  []string `json:"executors"`
	} `json:"partitions"`
}

// checkBlocks: every block of every cached RDD Spark lists is in strata
// trace and live in strata records with the executor Spark names, the
// agent's node and one pid per executor; every chunk of the serialized
// RDD's blocks, read at its recorded range through /proc/PID/mem, is the
// block's, and the chunks add up to Spark's memoryUsed exactly. It returns
// the executors by id.
func checkBlocks(t *testing.T, n *strataNode, s sparkjob.Step) map[string]executor {
	t.Helper()
	execs := map[string]executor{}
	for _, rdd := range []int{s.Ser, s.Deser, s.DF} {
		var r sparkRDD
		eventually(t, fmt.Sprintf("Spark lists RDD %d", rdd), 30*time.Second, func() error {
			url := fmt.Sprintf("%s/api/v1/applications/%s/storage/rdd/%d", s.UI, s.App, rdd)
			if err := getJSON(url, &r); err != nil {
				return err
			}
			if rdd != s.DF && len(r.Partitions) != s.Parts {
				return fmt.Errorf("%d partitions cached, want %d", len(r.Partitions), s.Parts)
			}
			if len(r.Partitions) == 0 {
				return fmt.Errorf("no partition cached")
			}
			return nil
		})
		eventually(t, fmt.Sprintf("RDD %d in strata trace and records", rdd), 30*time.Second, func() error {
			pages := map[string]jsonform.Page{}
			for _, p := range trace(t, n, s.App, "--rdd", strconv.Itoa(rdd)) {
				if p.Access == "alloc" {
					pages[p.BlockID] = p
				}
			}
			byBlock := map[string][]jsonform.Record{}
			for _, rec := range live(records(t, n, s.App, "--rdd", strconv.Itoa(rdd))) {
				byBlock[rec.BlockID] = append(byBlock[rec.BlockID], rec)
			}
			for _, p := range r.Partitions {
				if len(p.Executors) != 1 {
					return fmt.Errorf("block %s: Spark lists it on executors %v, want one", p.BlockName, p.Executors)
				}
				id := p.Executors[0]
				if pg, ok := pages[p.BlockName]; !ok || pg.ExecutorID != id {
					return fmt.Errorf("block %s (executor %s): in strata trace as %+v (found %v)", p.BlockName, id, pg.Block, ok)
				}
				chunks := byBlock[p.BlockName]
				if len(chunks) == 0 {
					return fmt.Errorf("block %s: no live range in strata records", p.BlockName)
				}
				for _, ch := range chunks {
					if ch.ExecutorID != id || ch.Node != nodeName || ch.PID == 0 {
						return fmt.Errorf("block %s (executor %s): recorded as executor %q on node %q, pid %d", p.BlockName, id, ch.ExecutorID, ch.Node, ch.PID)
					}
					e, seen := execs[id]
					if seen && e.pid != ch.PID {
						return fmt.Errorf("executor %s: blocks from pids %d and %d", id, e.pid, ch.PID)
					}
					execs[id] = executor{id: id, pid: ch.PID}
				}
				if rdd == s.Ser {
					if err := checkSerialized(chunks, p.MemoryUsed, rdd, partitionOf(p.BlockName), s); err != nil {
						return fmt.Errorf("block %s: %w", p.BlockName, err)
					}
				}
			}
			return nil
		})
		t.Logf("RDD %d: %d blocks, each in strata trace and records on the executor Spark lists", rdd, len(r.Partitions))
	}
	if len(execs) != 2 {
		t.Fatalf("cached blocks on executors %v, want blocks on both executors", execs)
	}
	return execs
}

// checkSerialized reads a serialized block's chunks in the executor's
// memory: they add up to Spark's size and hold the partition's records,
// each RECORD bytes of 32-byte stamps "STRATAr%06dp%06do%011d" (rdd,
// partition, offset), in order, with nothing else stamped.
func checkSerialized(chunks []jsonform.Record, memoryUsed int64, rdd, part int, s sparkjob.Step) error {
	byChunk := make([]jsonform.Record, len(chunks))
	var sum uint64
	for _, ch := range chunks {
		if ch.Hook == nil || int(ch.Chunks) != len(chunks) || int(ch.Chunk) >= len(chunks) {
			return fmt.Errorf("%d live ranges, chunk recorded as %+v", len(chunks), ch.Block)
		}
		byChunk[ch.Chunk] = ch
		sum += ch.Length
	}
	if sum != uint64(memoryUsed) {
		return fmt.Errorf("ranges add up to %d bytes, Spark says %d", sum, memoryUsed)
	}
	data, err := memoryAt(byChunk)
	if err != nil {
		return err
	}
	if got, want := bytes.Count(data, []byte("STRATAr")), s.Records*s.Record/32; got != want {
		return fmt.Errorf("%d stamps in memory, want %d", got, want)
	}
	at := 0
	for i := 0; i < s.Records; i++ {
		var rec bytes.Buffer
		for off := i * s.Record; off < (i+1)*s.Record; off += 32 {
			fmt.Fprintf(&rec, "STRATAr%06dp%06do%011d", rdd, part, off)
		}
		k := bytes.Index(data[at:], rec.Bytes())
		if k < 0 {
			return fmt.Errorf("record %d of partition %d not in memory after byte %d", i, part, at)
		}
		at += k + rec.Len()
	}
	return nil
}

var blockName = regexp.MustCompile(`^rdd_\d+_(\d+)$`)

func partitionOf(name string) int {
	m := blockName.FindStringSubmatch(name)
	if m == nil {
		return -1
	}
	p, _ := strconv.Atoi(m[1])
	return p
}

// memoryAt reads the bytes of each record's range, in order, through the
// /proc/PID/mem of its process.
func memoryAt(ranges []jsonform.Record) ([]byte, error) {
	var out []byte
	mems := map[uint32]*os.File{}
	defer func() {
		for _, f := range mems {
			f.Close()
		}
	}()
	for _, r := range ranges {
		addr, err := strconv.ParseUint(r.VAddr, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("vaddr %q: %w", r.VAddr, err)
		}
		mem := mems[r.PID]
		if mem == nil {
			if mem, err = os.Open(fmt.Sprintf("/proc/%d/mem", r.PID)); err != nil {
				return nil, err
			}
			mems[r.PID] = mem
		}
		at := len(out)
		out = append(out, make([]byte, r.Length)...)
		if _, err := mem.ReadAt(out[at:], int64(addr)); err != nil {
			return nil, fmt.Errorf("read pid %d at %s+%d: %w", r.PID, r.VAddr, r.Length, err)
		}
	}
	return out, nil
}

// checkContainers: each executor pid is the JVM of its own container of
// the application (YARN's CONTAINER_ID in its environment, Spark's
// --executor-id on its command line), and maps the hook's library from
// lib or, when lib is empty, from a NodeManager's local directories.
func checkContainers(t *testing.T, c *yarnCluster, app string, execs map[string]executor, lib string) {
	t.Helper()
	// application_<cluster>_<seq> -> container_<cluster>_<seq>_<attempt>_<n>
	prefix := "container_" + strings.TrimPrefix(app, "application_") + "_"
	containers := map[string]string{}
	for id, e := range execs {
		e.container = containerOf(t, e.pid)
		if !strings.HasPrefix(e.container, prefix) {
			t.Errorf("executor %s (pid %d): container %q, want one of %s", id, e.pid, e.container, app)
		}
		if other, dup := containers[e.container]; dup {
			t.Errorf("executors %s and %s in one container %s", id, other, e.container)
		}
		containers[e.container] = id
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", e.pid))
		if args := strings.Split(string(cmdline), "\x00"); !hasPair(args, "--executor-id", id) {
			t.Errorf("executor %s (pid %d): command line %q", id, e.pid, args)
		}
		maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", e.pid))
		mapped := ""
		for _, l := range strings.Split(string(maps), "\n") {
			if f := strings.Fields(l); len(f) == 6 && filepath.Base(f[5]) == "libstratahook.so" {
				mapped = f[5]
			}
		}
		switch {
		case lib != "" && mapped != lib:
			t.Errorf("executor %s (pid %d) maps the hook's library from %q, want %s", id, e.pid, mapped, lib)
		case lib == "" && !under(mapped, c.localDirs()):
			t.Errorf("executor %s (pid %d) maps the hook's library from %q, want the NodeManagers' cache (%v)", id, e.pid, mapped, c.localDirs())
		}
		t.Logf("executor %s: pid %d, %s, hook library %s", id, e.pid, e.container, mapped)
	}
}

// containerOf returns the YARN container a process runs in (CONTAINER_ID
// in its environment), "" outside one.
func containerOf(t *testing.T, pid uint32) string {
	t.Helper()
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("CONTAINER_ID=")); ok {
			return string(v)
		}
	}
	return ""
}

func hasPair(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if path != "" && strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// getJSON decodes the JSON answer of a GET (redirects followed: YARN's web
// proxy stands before an application master's pages).
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, sparkjob.Tail(string(body), 500))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
