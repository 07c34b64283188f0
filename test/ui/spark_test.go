package ui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/query/jsonform"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// sparkRDD is Spark's own view of one cached RDD (the driver's live REST
// API, /api/v1/applications/ID/storage/rdd).
type sparkRDD struct {
	ID                  int   `json:"id"`
	NumCachedPartitions int   `json:"numCachedPartitions"`
	MemoryUsed          int64 `json:"memoryUsed"`
}

// records reads an app's records through the UI's JSON API (Record
// lines, docs/api.md).
func records(t *testing.T, api, app string, query url.Values) []jsonform.Record {
	t.Helper()
	resp, err := http.Get(api + "/apps/" + url.PathEscape(app) + "/records?" + query.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("records: %s", resp.Status)
	}
	var out []jsonform.Record
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r jsonform.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("records line %s: %v", sc.Bytes(), err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// presentPages counts the pages of [vaddr, vaddr+n) that pid's pagemap
// says are present: the kernel's truth, read by the test itself.
func presentPages(t *testing.T, pid int, vaddr, n uint64) uint64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, last := vaddr/4096, (vaddr+n-1)/4096
	b := make([]byte, (last-first+1)*8)
	if _, err := f.ReadAt(b, int64(first*8)); err != nil {
		t.Fatal(err)
	}
	var present uint64
	for i := 0; i < len(b); i += 8 {
		present += uint64(b[i+7] >> 7)
	}
	return present
}

// TestUISpark drives the application, memory map and job pages of a real
// Spark application: Strata's test job in local mode under the JVM hook,
// its blocks through the real agent, its event log analysed by the
// collector. While the job holds its blocks, the UI's RDD table lists every
// RDD Spark's own REST API lists, serialized RDDs with Spark's exact
// memory size, the off-heap RDD's present pages as the executor's pagemap
// counts them, and the memory map colours the PFN under an off-heap block
// as that RDD; after the job, no block is live and the job's page shows
// Spark's heuristics and Strata's cross-layer ones with a link to the
// memory view.
func TestUISpark(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireJava(t)
	home := testenv.SparkHome(t, "3.5")
	b := newBrowser(t)
	bin := bins(t)
	histories := t.TempDir()
	col := startCollector(t, bin, histories)
	sock := startAgent(t, bin, col.grpc)
	api := col.http + "/api/v1"

	j := sparkjob.Start(t, home, "local[2]", []string{
		"spark.driver.extraJavaOptions=" + sparkjob.HookOpts(t, sock) + " -XX:+UseParallelGC",
		"spark.ui.showConsoleProgress=false",
		"spark.testing.memory=536870912", "spark.memory.fraction=0.2",
		"spark.sql.shuffle.partitions=2", "spark.buffer.pageSize=1m", "spark.sql.adaptive.enabled=false",
		"spark.rdd.compress=false",
		"spark.memory.offHeap.enabled=true", "spark.memory.offHeap.size=32m",
		"spark.eventLog.enabled=true", "spark.eventLog.dir=file://" + histories,
	}, "--offheap", "--parts", "4", "--records", "8", "--record", "131072", "--evict-mb", "48")
	s := j.Next(t, "cached")
	appPage := col.http + "/apps/" + url.PathEscape(s.App)

	var spark []sparkRDD
	if err := getJSON(fmt.Sprintf("%s/api/v1/applications/%s/storage/rdd", s.UI, s.App), &spark); err != nil {
		t.Fatal(err)
	}
	listed := map[int]sparkRDD{}
	for _, r := range spark {
		listed[r.ID] = r
	}
	for _, id := range []int{s.Ser, s.SerHeap, s.Deser} {
		if listed[id].NumCachedPartitions != s.Parts {
			t.Fatalf("Spark lists RDD %d with %d cached partitions, want %d: %+v", id, listed[id].NumCachedPartitions, s.Parts, spark)
		}
	}
	type uiRDD struct {
		RDD        int32  `json:"rdd"`
		LiveBlocks uint64 `json:"live_blocks"`
		Bytes      uint64 `json:"bytes"`
		Present    uint64 `json:"present"`
	}
	byRDD := map[int]uiRDD{}
	serialized := []int{s.Ser, s.SerHeap}
	waitFor(t, "the UI to list every RDD Spark caches, serialized ones at Spark's size", 60*time.Second, func() bool {
		var rows []uiRDD
		if getJSON(api+"/apps/"+url.PathEscape(s.App)+"/rdds", &rows) != nil {
			return false
		}
		byRDD = map[int]uiRDD{}
		for _, r := range rows {
			byRDD[int(r.RDD)] = r
		}
		for id := range listed {
			if byRDD[id].LiveBlocks < uint64(listed[id].NumCachedPartitions) {
				return false
			}
		}
		for _, id := range serialized {
			if byRDD[id].Bytes != uint64(listed[id].MemoryUsed) {
				return false
			}
		}
		return true
	})

	// The off-heap RDD's blocks stay where Spark put them: their present
	// pages, counted in the executor's pagemap, are the table's.
	allocs := records(t, api, s.App, url.Values{"rdd": {strconv.Itoa(s.Ser)}, "access": {"alloc"}})
	var truth uint64
	var first *jsonform.Record // chunk 0 of partition 0
	var firstVaddr uint64
	for i, r := range allocs {
		vaddr, err := strconv.ParseUint(strings.TrimPrefix(r.VAddr, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("record vaddr %q: %v", r.VAddr, err)
		}
		truth += presentPages(t, int(r.PID), vaddr, r.Length)
		if r.Partition == 0 && r.Hook != nil && r.Hook.Chunk == 0 {
			first, firstVaddr = &allocs[i], vaddr
		}
	}
	if first == nil {
		t.Fatalf("no record of rdd_%d_0 chunk 0 among %d allocations", s.Ser, len(allocs))
	}
	if int(first.PID) != s.PID {
		t.Errorf("rdd_%d_0 reported by pid %d, the job's JVM is %d", s.Ser, first.PID, s.PID)
	}

	t.Run("application", func(t *testing.T) {
		b.open(t, appPage)
		cell := func(rdd int, col string) string {
			cells := b.texts(t, fmt.Sprintf(`#rdd-table tr[data-rdd="%d"] td[data-col=%q]`, rdd, col))
			if len(cells) != 1 {
				t.Fatalf("RDD %d: %d cells %s", rdd, len(cells), col)
			}
			return cells[0]
		}
		for id, r := range listed {
			if got, want := cell(id, "blocks"), fmt.Sprintf("(%d)", byRDD[id].LiveBlocks); !strings.HasSuffix(got, want) {
				t.Errorf("RDD %d blocks cell %q, API says %d live", id, got, byRDD[id].LiveBlocks)
			}
			if byRDD[id].LiveBlocks < uint64(r.NumCachedPartitions) {
				t.Errorf("RDD %d: %d live blocks, Spark caches %d partitions", id, byRDD[id].LiveBlocks, r.NumCachedPartitions)
			}
		}
		for _, id := range serialized {
			var title string
			b.eval(t, fmt.Sprintf(`document.querySelector('#rdd-table tr[data-rdd="%d"] td[data-col="bytes"]').title`, id), &title)
			if want := fmt.Sprintf("%d bytes", listed[id].MemoryUsed); title != want {
				t.Errorf("RDD %d bytes %q, Spark says %s", id, title, want)
			}
		}
		if got := cell(s.Ser, "present"); got != strconv.FormatUint(truth, 10) {
			t.Errorf("off-heap RDD %d: %s present pages, the executor's pagemap says %d", s.Ser, got, truth)
		}
		b.shot(t, "spark-application")
	})

	t.Run("memory map", func(t *testing.T) {
		b.open(t, appPage+"/memory")
		b.shot(t, "spark-memory")
		legend := b.legend(t)
		pfn := pfnOf(t, s.PID, (firstVaddr+4095)&^4095) // the chunk's first whole page
		got := b.bucketAt(t, appPage, pfn)
		rdd := strconv.Itoa(s.Ser)
		if got.RDD != rdd || got.Fill == "" || got.Fill != legend[rdd] {
			t.Errorf("bar at PFN %#x under rdd_%d_0 is rdd %q colour %q; legend colour of RDD %s is %q",
				pfn, s.Ser, got.RDD, got.Fill, rdd, legend[rdd])
		}
	})

	// The job's GCs, unpersist and eviction, then its end: the event log
	// is complete and every block freed.
	for _, step := range []string{"gc", "unpersisted", "evicted"} {
		j.Proceed(t)
		j.Next(t, step)
	}
	j.Proceed(t)
	j.Finish(t)
	if _, err := os.Stat(filepath.Join(histories, s.App)); err != nil {
		t.Fatalf("the job's event log: %v", err)
	}

	t.Run("job", func(t *testing.T) {
		var jobs apiJobs
		waitFor(t, "the collector to analyse the job's event log", 90*time.Second, func() bool {
			var got apiJobs
			if getJSON(api+"/jobs?app="+url.QueryEscape(s.App), &got) != nil || got.Total != 1 {
				return false
			}
			jobs = got
			return true
		})
		var full apiJob
		if err := getJSON(api+"/jobs/"+url.PathEscape(jobs.Jobs[0].JobID), &full); err != nil {
			t.Fatal(err)
		}
		if full.Type != "spark" {
			t.Errorf("job type %q", full.Type)
		}
		b.open(t, col.http+"/jobs/"+url.PathEscape(full.JobID))
		if n := len(b.texts(t, ".heuristic")); n != len(full.Heur) || n == 0 {
			t.Errorf("page shows %d heuristics, API %d", n, len(full.Heur))
		}
		if len(b.texts(t, "section:last-of-type .heuristic h3")) == 0 {
			t.Error("no cross-layer heuristic on the Spark job's page")
		}
		var href string
		b.eval(t, `document.querySelector("#memory-link").getAttribute("href")`, &href)
		if href != "/apps/"+s.App {
			t.Errorf("memory link %q, want /apps/%s", href, s.App)
		}
		b.shot(t, "spark-job")
	})

	t.Run("after the job", func(t *testing.T) {
		var rows []uiRDD
		waitFor(t, "every block freed", 30*time.Second, func() bool {
			if getJSON(api+"/apps/"+url.PathEscape(s.App)+"/rdds", &rows) != nil {
				return false
			}
			for _, r := range rows {
				if r.LiveBlocks != 0 {
					return false
				}
			}
			return len(rows) >= len(listed)
		})
		b.open(t, appPage)
		for _, r := range rows {
			got := b.texts(t, fmt.Sprintf(`#rdd-table tr[data-rdd="%d"] td[data-col="blocks"]`, r.RDD))
			if len(got) != 1 || !strings.HasSuffix(got[0], "(0)") {
				t.Errorf("RDD %d blocks cell %v after the job, want none live", r.RDD, got)
			}
		}
		// Looking back: the ended job's map is not empty by default; it
		// shows the moment its RDDs held the most, and says so.
		var m struct {
			Pages  uint64 `json:"pages"`
			Hidden uint64 `json:"hidden"`
			Moment struct {
				Kind  string `json:"kind"`
				Ended bool   `json:"ended"`
				Says  string `json:"says"`
				Pages uint64 `json:"pages"`
			} `json:"moment"`
		}
		if err := getJSON(api+"/apps/"+url.PathEscape(s.App)+"/memmap", &m); err != nil {
			t.Fatal(err)
		}
		if m.Moment.Kind != "peak" || !m.Moment.Ended || !strings.HasPrefix(m.Moment.Says, "the moment its RDDs held the most: ") ||
			m.Moment.Pages == 0 || m.Pages+m.Hidden < m.Moment.Pages {
			t.Errorf("the ended job's default map: %d pages (%d hidden), moment %+v", m.Pages, m.Hidden, m.Moment)
		}
		b.open(t, appPage+"/memory")
		if bars := b.texts(t, "rect.bucket"); len(bars) == 0 {
			t.Error("the ended job's memory map draws no bar")
		}
		if says := b.texts(t, ".memmap .moment-says"); len(says) != 1 || !strings.Contains(says[0], "the moment its RDDs held the most") {
			t.Errorf("the memory page says %q", says)
		}
		b.shot(t, "spark-memory-after")
	})
}
