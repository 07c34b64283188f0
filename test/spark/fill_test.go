package spark

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// fillJob caches two RDDs whose records are made as Spark takes them (a
// lazy iterator: the put computes them), MEMORY_ONLY_SER and cache(),
// mib MiB of 64 KiB byte[] records in each partition, prints one JSON line
// and waits for a line on stdin. StrataJob makes its records before the
// put begins, so its deserialized puts fill nothing.
const fillJob = `
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.StorageLevel;

public final class FillJob {
    public static void main(String[] args) throws Exception {
        int parts = Integer.parseInt(args[0]), mib = Integer.parseInt(args[1]);
        JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("strata-fill"));
        JavaRDD<byte[]> ser = made(sc, parts, mib).persist(StorageLevel.MEMORY_ONLY_SER());
        ser.count();
        JavaRDD<byte[]> deser = made(sc, parts, mib).cache();
        deser.count();
        long gcs = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs += gc.getCollectionCount();
        }
        Runtime rt = Runtime.getRuntime();
        System.out.println("{\"step\":\"cached\",\"app\":\"" + sc.sc().applicationId() + "\",\"ser\":" + ser.id()
                + ",\"deser\":" + deser.id() + ",\"pid\":" + ProcessHandle.current().pid() + ",\"gcs\":" + gcs
                + ",\"used_mb\":" + (rt.totalMemory() - rt.freeMemory()) / (1 << 20) + "}");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        sc.stop();
    }

    static JavaRDD<byte[]> made(JavaSparkContext sc, int parts, int mib) {
        List<Integer> seeds = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            seeds.add(i);
        }
        return sc.parallelize(seeds, parts).mapPartitions(it -> new Iterator<byte[]>() {
            int left = mib * 16;

            public boolean hasNext() {
                return left > 0;
            }

            public byte[] next() {
                byte[] b = new byte[64 << 10];
                Arrays.fill(b, (byte) left--);
                return b;
            }
        }, true);
    }
}
`

// buildFillJob compiles fillJob against a Spark's jars into a jar.
func buildFillJob(t *testing.T, home string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "FillJob.java")
	if err := os.WriteFile(src, []byte(fillJob), 0o644); err != nil {
		t.Fatal(err)
	}
	classes := filepath.Join(dir, "classes")
	out, err := exec.Command("javac", "-nowarn", "-cp", filepath.Join(home, "jars", "*"), "-d", classes, src).CombinedOutput()
	if err != nil {
		t.Fatalf("javac FillJob: %v\n%s", err, out)
	}
	jar := filepath.Join(dir, "fill.jar")
	f, err := os.Create(jar)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	entries, err := os.ReadDir(classes)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(classes, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return jar
}

// TestFillFaults: with the real agent and collector, each put of a
// serialized (MEMORY_ONLY_SER) and a deserialized (cache()) block of N MiB
// made in fresh memory (an untouched young generation) counts at least
// N MiB / 4 KiB write faults as the block's fill in `strata faults`, on
// both Spark series.
func TestFillFaults(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireJava(t)
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skipf("skipping: javac not found: %v", err)
	}
	for _, v := range series {
		t.Run("spark"+v, func(t *testing.T) { runFill(t, v) })
	}
}

func runFill(t *testing.T, v string) {
	const parts, mib = 2, 8
	home := testenv.SparkHome(t, v)
	jar := buildFillJob(t, home)
	n := startNode(t)
	// Fresh memory: no collection before the puts (checked below), so every
	// record and buffer they allocate is in pages of the young generation
	// never touched before. A 1 GiB young generation holds what the JVM
	// allocates before the puts end (about 300 MB) when TLABs keep a fixed
	// 1 MiB (grown with the young generation, the TLABs handed out filled
	// 3 GiB before the puts), and the metaspace starts large enough that
	// class loading triggers no collection. One task at a time (local[1]):
	// two tasks' 64 KiB records, allocated in the young generation in
	// turns, would share the pages where one's array ends and the other's
	// begins, and whichever thread touched such a page first took its fault.
	opts := sparkjob.HookOpts(t, n.socket) + " -XX:+UseParallelGC -Xmn1g -XX:-ResizeTLAB -XX:TLABSize=1m -XX:MetaspaceSize=256m"
	argv := []string{"--master", "local[1]", "--class", "FillJob",
		"--conf", "spark.driver.extraJavaOptions=" + opts, "--conf", "spark.driver.memory=2g",
		"--conf", "spark.ui.enabled=false", "--conf", "spark.rdd.compress=false", jar, fmt.Sprint(parts), fmt.Sprint(mib)}
	cmd := exec.Command(filepath.Join(home, "bin", "spark-submit"), argv...)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
	stderr := &testenv.Output{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait() // once the cached line is read, the rest of stdout may go
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("--- job stderr (last 4000 bytes):\n%s", sparkjob.Tail(stderr.String(), 4000))
		}
	})
	var step struct {
		App        string
		Ser, Deser int32
		PID        uint32
		GCs        int64
		UsedMB     int64 `json:"used_mb"`
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), `{"step":"cached"`) {
				lines <- sc.Text()
			}
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the job ended before caching")
		}
		if err := json.Unmarshal([]byte(l), &step); err != nil {
			t.Fatalf("job line %q: %v", l, err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the job did not cache in 3 minutes")
	}
	t.Logf("the job cached with %d MB of heap in use", step.UsedMB)
	if step.GCs != 0 {
		t.Fatalf("%d collections before the job had cached (%d MB in use): its puts did not fill fresh memory", step.GCs, step.UsedMB)
	}

	type counts struct{ Read, Write, Major uint64 }
	type row struct {
		RDD       int32  `json:"rdd"`
		Partition int32  `json:"partition"`
		BlockID   string `json:"block_id"`
		PID       uint32 `json:"pid"`
		Fill      *counts
	}
	var fills map[string]counts
	eventually(t, "fill faults of every block", 60*time.Second, func() error {
		fills = map[string]counts{}
		out, err := exec.Command(testenv.Built(t, "strata"), "faults", "--app", step.App, "-o", "json",
			"--collector", n.collector).Output()
		if err != nil {
			return fmt.Errorf("strata faults: %w", err) // the app may have no records yet
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for dec.More() {
			var r row
			if err := dec.Decode(&r); err != nil {
				return err
			}
			if (r.RDD == step.Ser || r.RDD == step.Deser) && r.Fill != nil {
				if r.PID != step.PID {
					return fmt.Errorf("%s's fill in pid %d, the job is %d", r.BlockID, r.PID, step.PID)
				}
				fills[r.BlockID] = *r.Fill
			}
		}
		for _, rdd := range []int32{step.Ser, step.Deser} {
			for p := 0; p < parts; p++ {
				if _, ok := fills[fmt.Sprintf("rdd_%d_%d", rdd, p)]; !ok {
					return fmt.Errorf("no fill of rdd_%d_%d yet (have %v; the agent's fills begun %v, stored %v, claimed %v)",
						rdd, p, fills, n.metric(t, "strata_faults_fills_begun_total"), n.metric(t, "strata_faults_fills_stored_total"),
						n.metric(t, "strata_faults_fills_claimed_total"))
				}
			}
		}
		return nil
	})
	want := uint64(mib << 20 / 4096)
	for name, c := range fills {
		t.Logf("%s: fill %d read, %d write, %d major faults", name, c.Read, c.Write, c.Major)
		if c.Write < want {
			t.Errorf("%s: %d write faults filling %d MiB of fresh memory, want at least %d", name, c.Write, mib, want)
		}
	}
	if claimed := n.metric(t, "strata_faults_fills_claimed_total"); claimed < 2*parts {
		t.Errorf("strata_faults_fills_claimed_total %v, want at least %d", claimed, 2*parts)
	}
	// The hook's own count: every put marked, none of its calls failed.
	io.WriteString(stdin, "\n")
	stdin.Close()
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("job: %v", waitErr)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the job did not end in 2 minutes")
	}
	hook, err := sparkjob.ParseHookCounters(stderr.String())
	if err != nil {
		t.Fatal(err)
	}
	if hook["errors"] != 0 || hook["fills-stored"] < 2*parts || hook["fills"] < hook["fills-stored"] {
		t.Errorf("hook counters %v: want no errors and at least %d fills stored", hook, 2*parts)
	}
}
