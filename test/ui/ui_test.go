package ui

import (
	"encoding/binary"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stratatrace/strata/test/gen"
	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// tracedApp is the application id of the workloads' blocks and of one
// Spark event log, so its job gets the cross-layer heuristics and a link
// to the memory view.
const tracedApp = "application_1700000000000_0100"

var (
	users  = []string{"alice", "bob", "carol"}
	queues = []string{"default", "etl"}
)

const mrJobs = 30

// writeHistories writes mrJobs MapReduce jobs (users and queues in turn,
// every third one badly skewed) and three Spark event logs, the first of
// tracedApp.
func writeHistories(t *testing.T, dir string) {
	t.Helper()
	for i := 1; i <= mrJobs; i++ {
		skew := 1.0
		if i%3 == 0 {
			skew = 12
		}
		_, err := gen.WriteMRJob(dir, gen.MRJob{JobID: fmt.Sprintf("job_1700000000000_%04d", i), Maps: 40, Reduces: 4,
			User: users[i%len(users)], Queue: queues[i%len(queues)], Name: fmt.Sprintf("etl-%d", i),
			Skew: skew, GCRatio: 0.05 * float64(i%5), SubmitMs: 1700000000000 + int64(i)*3_600_000, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, app := range []string{tracedApp, "application_1700000000000_0101", "application_1700000000000_0102"} {
		f, err := os.Create(dir + "/" + app)
		if err != nil {
			t.Fatal(err)
		}
		err = gen.WriteSparkLog(f, gen.SparkApp{AppID: app, Name: "spark-" + app[len(app)-4:], User: users[i], Executors: 2,
			Stages: 3, TasksPerStage: 20, StartMs: 1700000000000 + int64(40+i)*3_600_000, GCRatio: 0.1 * float64(i+1),
			Seed: uint64(100 + i)})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// pfnOf reads the PFN of vaddr in pid from /proc/PID/pagemap: the
// kernel's truth, read by the test itself.
func pfnOf(t *testing.T, pid int, vaddr uint64) uint64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(vaddr/4096*8)); err != nil {
		t.Fatal(err)
	}
	e := binary.LittleEndian.Uint64(b[:])
	if e&(1<<63) == 0 {
		t.Fatalf("page %#x of pid %d not present", vaddr, pid)
	}
	return e & (1<<55 - 1)
}

type apiJob struct {
	JobID    string `json:"job_id"`
	AppID    string `json:"app_id"`
	User     string `json:"user"`
	Severity string `json:"severity"`
	Type     string `json:"type"`
	Score    int64  `json:"score"`
	Heur     []struct {
		Name     string `json:"name"`
		Severity string `json:"severity"`
	} `json:"heuristics"`
}

type apiJobs struct {
	Total uint64   `json:"total"`
	Jobs  []apiJob `json:"jobs"`
}

// TestUI drives every page of the UI in Chromium against a collector
// holding the C workload's blocks (two executors, RDDs 7 and 8, through
// the real agent) and 33 analysed jobs.
func TestUI(t *testing.T) {
	testenv.RequireRoot(t)
	b := newBrowser(t)
	bin := bins(t)
	histories := t.TempDir()
	col := startCollector(t, bin, histories)
	sock := startAgent(t, bin, col.grpc)
	wbin := workload.Build(t)
	w7 := workload.Start(t, wbin, workload.Options{Socket: sock, AppID: tracedApp, ExecutorID: "1", RDD: 7})
	w8 := workload.Start(t, wbin, workload.Options{Socket: sock, AppID: tracedApp, ExecutorID: "2", RDD: 8})

	// The truth: every page a region touched is present.
	want := map[int32][2]uint64{} // rdd -> pages, present
	for _, w := range []*workload.Process{w7, w8} {
		for _, r := range w.Regions {
			v := want[r.RDD]
			want[r.RDD] = [2]uint64{v[0] + r.Pages, v[1] + r.TouchedPages}
		}
	}
	api := col.http + "/api/v1"
	appURL := "/apps/" + tracedApp
	type rddRow struct {
		RDD     int32  `json:"rdd"`
		Pages   uint64 `json:"pages"`
		Present uint64 `json:"present"`
		Swapped uint64 `json:"swapped"`
		Reads   uint64 `json:"reads"`
		Writes  uint64 `json:"writes"`
		Color   string `json:"color"`
	}
	var rows []rddRow
	waitFor(t, "the collector to hold both workloads' blocks", 60*time.Second, func() bool {
		if err := getJSON(api+appURL+"/rdds", &rows); err != nil || len(rows) != 2 {
			return false
		}
		for _, r := range rows {
			if r.Present != want[r.RDD][1] || r.Reads == 0 {
				return false
			}
		}
		return true
	})
	// Histories only now, so the traced app's job is analysed with its
	// traces.
	writeHistories(t, histories)
	var all apiJobs
	waitFor(t, "the collector to analyse 33 jobs", 120*time.Second, func() bool {
		var got apiJobs // fresh: protojson leaves zero values out
		if getJSON(api+"/jobs?limit=100", &got) != nil || got.Total != mrJobs+3 {
			return false
		}
		all = got
		return true
	})

	t.Run("dashboard", func(t *testing.T) {
		b.open(t, col.http+"/")
		var counts map[string]string
		b.eval(t, `Object.fromEntries([...document.querySelectorAll("#sev-counts li")].map((li) => [li.dataset.severity, li.querySelector("a").textContent]))`, &counts)
		bySev := map[string]int{}
		for _, j := range all.Jobs {
			sev := strings.ToLower(strings.TrimPrefix(j.Severity, "SEVERITY_"))
			if sev == "" {
				sev = "none" // protojson leaves the zero value out
			}
			bySev[sev]++
		}
		total := 0
		for sev, n := range counts {
			got, _ := strconv.Atoi(n)
			total += got
			if got != bySev[sev] {
				t.Errorf("dashboard %s = %d, API says %d", sev, got, bySev[sev])
			}
		}
		if total != mrJobs+3 {
			t.Errorf("dashboard counts %d jobs, want %d", total, mrJobs+3)
		}
		if n := len(b.texts(t, "svg.severity-chart rect.bar")); n == 0 {
			t.Error("no bars in the severity chart")
		}
		b.shot(t, "dashboard")
	})

	t.Run("search and pagination", func(t *testing.T) {
		b.open(t, col.http+"/jobs")
		if got := b.texts(t, "#result-count")[0]; got != "33 jobs · page 1 of 2" {
			t.Errorf("count line %q", got)
		}
		page1 := b.texts(t, "table.jobs tbody tr[data-job] td:first-child")
		b.shot(t, "jobs")
		b.follow(t, "next page", chromedp.Click(`//nav[@id="pager"]/a[contains(., "next")]`))
		b.noErrors(t, "jobs page 2")
		page2 := b.texts(t, "table.jobs tbody tr[data-job] td:first-child")
		if len(page1) != 25 || len(page2) != 8 {
			t.Fatalf("pages hold %d and %d jobs, want 25 and 8", len(page1), len(page2))
		}
		seen := map[string]bool{}
		for _, id := range append(page1, page2...) {
			if seen[id] {
				t.Errorf("job %s on both pages", id)
			}
			seen[id] = true
		}
		// The form: user bob, MapReduce only.
		b.open(t, col.http+"/jobs")
		b.run(t, "fill the search form",
			chromedp.SendKeys(`input[name="user"]`, "bob", chromedp.ByQuery),
			chromedp.SetValue(`select[name="type"]`, "mapreduce", chromedp.ByQuery))
		b.follow(t, "search bob's mapreduce jobs", chromedp.Submit(`#search`, chromedp.ByQuery))
		b.noErrors(t, "search")
		var bob apiJobs
		if err := getJSON(api+"/jobs?user=bob&type=mapreduce&limit=100", &bob); err != nil {
			t.Fatal(err)
		}
		users := b.texts(t, "table.jobs tbody tr[data-job] td:nth-child(5)")
		if len(users) != mrJobs/3 || uint64(len(users)) != bob.Total {
			t.Errorf("bob's mapreduce jobs: %d rows, API %d, want %d", len(users), bob.Total, mrJobs/3)
		}
		for _, u := range users {
			if u != "bob" {
				t.Errorf("user filter shows %q", u)
			}
		}
		// Severity and finish-time filters from the URL.
		var sev apiJobs
		if err := getJSON(api+"/jobs?severity=severe&limit=100", &sev); err != nil {
			t.Fatal(err)
		}
		b.open(t, col.http+"/jobs?severity=severe&limit=100")
		if n := len(b.texts(t, "table.jobs tbody tr[data-job]")); uint64(n) != sev.Total {
			t.Errorf("severe and worse: %d rows, API %d", n, sev.Total)
		}
		from := time.UnixMilli(1700000000000 + 10*3_600_000).UTC().Format("2006-01-02T15:04")
		to := time.UnixMilli(1700000000000 + 20*3_600_000).UTC().Format("2006-01-02T15:04")
		var window apiJobs
		q := "from=" + url.QueryEscape(from) + "&to=" + url.QueryEscape(to)
		if err := getJSON(api+"/jobs?limit=100&"+q, &window); err != nil {
			t.Fatal(err)
		}
		b.open(t, col.http+"/jobs?"+q)
		if n := len(b.texts(t, "table.jobs tbody tr[data-job]")); n == 0 || uint64(n) != window.Total || window.Total >= mrJobs {
			t.Errorf("finish window: %d rows, API %d", n, window.Total)
		}
	})

	var tracedJob apiJob
	for _, j := range all.Jobs {
		if j.AppID == tracedApp {
			tracedJob = j
		}
	}
	t.Run("job", func(t *testing.T) {
		if tracedJob.JobID == "" {
			t.Fatal("no job of the traced application")
		}
		var full apiJob
		if err := getJSON(api+"/jobs/"+url.PathEscape(tracedJob.JobID), &full); err != nil {
			t.Fatal(err)
		}
		b.open(t, col.http+"/jobs/"+url.PathEscape(tracedJob.JobID))
		var heur [][3]string // name, severity, border colour
		b.eval(t, `[...document.querySelectorAll(".heuristic")].map((h) => [h.dataset.name, h.dataset.severity, getComputedStyle(h).borderLeftColor])`, &heur)
		if len(heur) != len(full.Heur) {
			t.Fatalf("page shows %d heuristics, API %d", len(heur), len(full.Heur))
		}
		sevRGB := map[string]string{"none": "rgb(76, 175, 80)", "low": "rgb(139, 195, 74)", "moderate": "rgb(242, 193, 46)",
			"severe": "rgb(239, 138, 23)", "critical": "rgb(214, 69, 69)"}
		for i, h := range full.Heur {
			sev := strings.ToLower(strings.TrimPrefix(h.Severity, "SEVERITY_"))
			if sev == "" {
				sev = "none"
			}
			if heur[i][0] != h.Name || heur[i][1] != sev || heur[i][2] != sevRGB[sev] {
				t.Errorf("heuristic %d on the page %v, API %s %s", i, heur[i], h.Name, sev)
			}
		}
		cross := b.texts(t, "section:last-of-type .heuristic h3")
		if len(cross) == 0 {
			t.Error("no cross-layer heuristic on the traced application's job")
		}
		if n := len(b.texts(t, "#metrics .metric")); n != 4 {
			t.Errorf("%d metrics, want 4", n)
		}
		var href string
		b.eval(t, `document.querySelector("#memory-link").getAttribute("href")`, &href)
		if href != appURL {
			t.Errorf("memory link %q, want %q", href, appURL)
		}
		b.shot(t, "job")
	})

	t.Run("application", func(t *testing.T) {
		b.open(t, col.http+appURL)
		for _, r := range rows {
			cell := func(col string) string {
				return b.texts(t, fmt.Sprintf(`#rdd-table tr[data-rdd="%d"] td[data-col=%q]`, r.RDD, col))[0]
			}
			if got := cell("present"); got != strconv.FormatUint(want[r.RDD][1], 10) {
				t.Errorf("RDD %d present %s, the workload touched %d pages", r.RDD, got, want[r.RDD][1])
			}
			if got := cell("pages"); got != strconv.FormatUint(want[r.RDD][0], 10) {
				t.Errorf("RDD %d pages %s, the workload mapped %d", r.RDD, got, want[r.RDD][0])
			}
			if got := cell("swapped"); got != "0" {
				t.Errorf("RDD %d swapped %s", r.RDD, got)
			}
			if got := cell("reads"); got != strconv.FormatUint(r.Reads, 10) {
				t.Errorf("RDD %d reads %s, API %d", r.RDD, got, r.Reads)
			}
		}
		var bars int
		b.eval(t, `document.querySelectorAll("svg.numa-chart rect.bar").length`, &bars)
		var lines int
		b.eval(t, `document.querySelectorAll("svg.occupancy-chart polyline.series").length`, &lines)
		if bars < 2 || lines != 2 {
			t.Errorf("numa chart %d bars, occupancy chart %d lines", bars, lines)
		}
		b.shot(t, "application")
	})

	t.Run("memory map", func(t *testing.T) {
		b.open(t, col.http+appURL+"/memory")
		var inView string
		b.eval(t, `document.querySelector(".memmap-status").textContent`, &inView)
		total := want[7][1] + want[8][1]
		if !strings.Contains(inView, fmt.Sprintf(" %d pages in view of %d on the map", total, total)) {
			t.Errorf("whole machine: %q, want all %d present pages", inView, total)
		}
		b.shot(t, "memory")
		legend := b.legend(t)
		// Zoom to each region's first pages, read from the kernel: the bar at
		// that PFN is the region's RDD's colour.
		for _, w := range []*workload.Process{w7, w8} {
			for _, r := range w.Regions {
				pfn := pfnOf(t, w.PID, r.Vaddr)
				got := b.bucketAt(t, col.http+appURL, pfn)
				rdd := strconv.Itoa(int(r.RDD))
				if got.RDD != rdd || got.Fill == "" || got.Fill != legend[rdd] {
					t.Errorf("%s: bar at PFN %#x is rdd %q colour %q; legend colour of RDD %s is %q", r.Block, pfn, got.RDD, got.Fill, rdd, legend[rdd])
				}
			}
		}
		b.shot(t, "memory-zoomed")
	})

	t.Run("block life", func(t *testing.T) {
		r := w7.Regions[0]
		b.open(t, fmt.Sprintf("%s%s/blocks/1/%s", col.http, appURL, r.Block))
		accesses := b.texts(t, "#life-table tbody tr td:nth-child(2)")
		if len(accesses) < 3 || accesses[0] != "alloc" || accesses[1] != "write" || accesses[2] != "read" {
			t.Fatalf("steps %v, want alloc, write, read first", accesses)
		}
		// The latest lifecycle step (fault records carry counters or one
		// sampled page) holds every page the workload touched.
		present := b.texts(t, `#life-table tbody tr[data-access="read"] td[data-col="present"]`)
		if last := present[len(present)-1]; last != strconv.FormatUint(r.TouchedPages, 10) {
			t.Errorf("last step holds %s present pages, the workload touched %d", last, r.TouchedPages)
		}
		pfn := pfnOf(t, w7.PID, r.Vaddr)
		var listed bool
		b.eval(t, fmt.Sprintf(`[...document.querySelectorAll('#life-table tbody tr[data-access="read"] .pfn')].some((s) => +s.dataset.first <= %d && %d <= +s.dataset.last)`, pfn, pfn), &listed)
		if !listed {
			t.Errorf("PFN %#x of the block's first page is not among the last step's ranges", pfn)
		}
		b.shot(t, "block")
	})

	t.Run("overhead and lists", func(t *testing.T) {
		b.open(t, col.http+appURL+"/overhead")
		if n := len(b.texts(t, "#rate-table tbody tr[data-rdd]")); n != 2 {
			t.Errorf("%d RDDs in the fault table, want 2", n)
		}
		for _, cell := range b.texts(t, "#overhead-table td.walk") {
			if !strings.HasPrefix(cell, "unavailable") && !strings.HasSuffix(cell, "%") && !strings.HasPrefix(cell, "not measured") {
				t.Errorf("page-walk cell %q", cell)
			}
		}
		b.shot(t, "overhead")
		b.open(t, col.http+"/apps")
		b.open(t, col.http+appURL+"/rdds/7")
		if n := len(b.texts(t, "#block-table tbody tr")); n != len(w7.Regions) {
			t.Errorf("RDD 7 lists %d blocks, the workload registered %d", n, len(w7.Regions))
		}
	})
}

// TestUISamples opens the page of every job the collector analyses from
// the real job histories and event logs in $STRATA_SAMPLES: each renders
// without a console error and shows every heuristic the API holds, long
// texts included.
func TestUISamples(t *testing.T) {
	samples := testenv.Samples(t)
	b := newBrowser(t)
	bin := bins(t)
	col := startCollector(t, bin, samples)
	var all apiJobs
	var prev uint64
	stable := 0
	waitFor(t, "the collector to analyse the samples", 120*time.Second, func() bool {
		var got apiJobs
		if getJSON(col.http+"/api/v1/jobs?limit=1000", &got) != nil {
			return false
		}
		if got.Total > 0 && got.Total == prev {
			stable++
		} else {
			stable = 0
		}
		prev, all = got.Total, got
		time.Sleep(400 * time.Millisecond) // polls are 1 s apart
		return stable >= 3
	})
	t.Logf("%d sample jobs analysed", all.Total)
	b.open(t, col.http+"/")
	b.shot(t, "dashboard-samples")
	b.open(t, col.http+"/jobs?order=worst")
	// all.Jobs is newest first; the first job page shot is the newest.
	b.shot(t, "jobs-samples")
	for i, j := range all.Jobs {
		var full apiJob
		if err := getJSON(col.http+"/api/v1/jobs/"+url.PathEscape(j.JobID), &full); err != nil {
			t.Fatal(err)
		}
		b.open(t, col.http+"/jobs/"+url.PathEscape(j.JobID))
		if n := len(b.texts(t, ".heuristic")); n != len(full.Heur) {
			t.Errorf("%s: page shows %d heuristics, API %d", j.JobID, n, len(full.Heur))
		}
		if i == 0 {
			b.shot(t, "job-samples")
		}
	}
}
