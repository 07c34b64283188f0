package spark

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// coldCacheJob is the Spark application of TestColdCacheSpark: two RDDs of
// the same size cached serialized (4 partitions of 24 records of 256 KiB:
// 24 MiB each); the first ("cold") filled by one count and never read
// again, the second ("hot") counted twenty times, the first count filling
// it. It prints {"app":…,"hot":…,"cold":…,"parts":4} and stops.
const coldCacheJob = `import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.storage.StorageLevel;

public final class StrataColdCacheJob {
    static JavaRDD<byte[]> rdd(JavaSparkContext sc, int parts) {
        List<Integer> seeds = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            seeds.add(i);
        }
        return sc.parallelize(seeds, parts).mapPartitionsWithIndex((p, it) -> {
            List<byte[]> out = new ArrayList<>();
            for (int r = 0; r < 24; r++) {
                byte[] b = new byte[256 << 10];
                Arrays.fill(b, (byte) (p + r + 1));
                out.add(b);
            }
            return out.iterator();
        }, true);
    }

    public static void main(String[] args) {
        JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("strata-cold-cache"));
        JavaRDD<byte[]> cold = rdd(sc, 4).persist(StorageLevel.MEMORY_ONLY_SER());
        cold.count();
        JavaRDD<byte[]> hot = rdd(sc, 4).persist(StorageLevel.MEMORY_ONLY_SER());
        for (int i = 0; i < 20; i++) {
            hot.count();
        }
        System.out.println("{\"app\":\"" + sc.sc().applicationId() + "\",\"hot\":" + hot.id() + ",\"cold\":" + cold.id()
                + ",\"parts\":4}");
        System.out.flush();
        sc.stop();
    }
}
`

// coldCacheJar compiles coldCacheJob against home's Spark into a jar.
func coldCacheJar(t *testing.T, home string) string {
	t.Helper()
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skipf("skipping: no javac on PATH: %v", err)
	}
	dir := t.TempDir()
	src, classes := filepath.Join(dir, "StrataColdCacheJob.java"), filepath.Join(dir, "classes")
	if err := os.WriteFile(src, []byte(coldCacheJob), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("javac", "--release", "17", "-cp", filepath.Join(home, "jars", "*"), "-d", classes, src).CombinedOutput()
	if err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	jar := filepath.Join(dir, "coldcache.jar")
	f, err := os.Create(jar)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(classes, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(classes, p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		r, err := os.Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(w, r)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("write %s: %v", jar, err)
	}
	return jar
}

// TestColdCacheSpark: a real Spark job (local[2] under the JVM hook, Spark
// 3.5) caches two RDDs of the same size, reads one twenty times and the
// other once, through the real agent into a real collector. The store
// counts, per block of the first, twenty gets of which one is its put's
// read-back, and of the second only the read-back; the cold cache
// heuristic over those blocks flags the second and not the first.
func TestColdCacheSpark(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireJava(t)
	home := testenv.SparkHome(t, "3.5")
	jar := coldCacheJar(t, home)
	col := servertest.Start(t, nil, nil)
	n := &node{dir: t.TempDir(), collector: col.Addr}
	n.socket = filepath.Join(n.dir, "hook.sock")
	n.startAgent(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(home, "bin", "spark-submit"), "--master", "local[2]",
		"--class", "StrataColdCacheJob", "--conf", "spark.driver.extraJavaOptions="+sparkjob.HookOpts(t, n.socket),
		"--conf", "spark.driver.memory=700m", "--conf", "spark.ui.enabled=false", "--conf", "spark.ui.showConsoleProgress=false",
		"--conf", "spark.rdd.compress=false", jar)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1")
	stderr := &testenv.Output{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("spark-submit: %v\n%s", err, sparkjob.Tail(stderr.String(), 6000))
	}
	var ran struct {
		App       string `json:"app"`
		Hot, Cold int
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, `{"app"`) {
			if err := json.Unmarshal([]byte(l), &ran); err != nil {
				t.Fatalf("job line %q: %v", l, err)
			}
		}
	}
	if ran.App == "" {
		t.Fatalf("the job printed no line:\n%s", out)
	}
	t.Logf("app %s: hot RDD %d, cold RDD %d", ran.App, ran.Hot, ran.Cold)

	// Every get reaches the collector: twenty per hot block (one a
	// buffer's read), one per cold block.
	eventually(t, "the hook's reads in the collector", 60*time.Second, func() error {
		reads := map[int32]map[string]bool{}
		for _, r := range n.records(t, ran.App, "--access", "read") {
			if r.Chunk == 0 {
				if reads[r.RDD] == nil {
					reads[r.RDD] = map[string]bool{}
				}
				reads[r.RDD][fmt.Sprintf("%s@%s", r.BlockID, r.Time.Format(time.RFC3339Nano))] = true
			}
		}
		if h, c := len(reads[int32(ran.Hot)]), len(reads[int32(ran.Cold)]); h < 20*4 || c < 4 {
			return fmt.Errorf("%d reads of the hot RDD's blocks, %d of the cold one's", h, c)
		}
		return nil
	})
	if err := col.Stop(); err != nil {
		t.Fatalf("stop the collector: %v", err)
	}
	st, err := store.Open(context.Background(), store.Options{Dir: col.StoreDir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	blocks, err := st.CachedBlocks(context.Background(), ran.App)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int]int{}
	for _, b := range blocks {
		per[int(b.RDD)]++
		switch int(b.RDD) {
		case ran.Hot:
			if b.Gets != 20 || b.PutReads != 1 || b.Reads() != 19 {
				t.Errorf("hot block %s: %d gets, %d the put's read-back; want 20 and 1", b.BlockID, b.Gets, b.PutReads)
			}
		case ran.Cold:
			if b.Gets != 1 || b.PutReads != 1 {
				t.Errorf("cold block %s: %d gets, %d the put's read-back; want 1 and 1", b.BlockID, b.Gets, b.PutReads)
			}
		}
		if b.Pages == 0 {
			t.Errorf("block %s: no resolved pages", b.BlockID)
		}
	}
	if per[ran.Hot] != 4 || per[ran.Cold] != 4 {
		t.Fatalf("blocks per RDD %v, want 4 of RDD %d and of RDD %d", per, ran.Hot, ran.Cold)
	}

	cfg, err := heuristics.LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := heuristics.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := eng.AnalyzeWithTrace(&job.Job{ID: ran.App, AppID: ran.App, Type: job.Spark, Spark: &job.SparkApp{}},
		&heuristics.TraceSummary{AppID: ran.App, Blocks: blocks})
	var found bool
	for _, h := range res.GetHeuristics() {
		if h.GetName() != "Cold Cache" {
			continue
		}
		found = true
		names := map[string]string{}
		for _, d := range h.GetDetails() {
			names[d.GetName()] = d.GetValue()
		}
		if _, ok := names[fmt.Sprintf("rdd %d", ran.Cold)]; !ok {
			t.Errorf("Cold Cache does not flag the RDD read once, %d: %v", ran.Cold, names)
		}
		if _, ok := names[fmt.Sprintf("rdd %d", ran.Hot)]; ok {
			t.Errorf("Cold Cache flags the RDD read twenty times, %d: %v", ran.Hot, names)
		}
		t.Logf("Cold Cache: %v %v", h.GetSeverity(), names)
	}
	if !found {
		t.Errorf("no Cold Cache result: %v", res.GetHeuristics())
	}
}
