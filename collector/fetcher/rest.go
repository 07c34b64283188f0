package fetcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/stratatrace/strata/collector/job"
)

// maxResponseBytes bounds one REST response body.
const maxResponseBytes = 256 << 20

// restConcurrency is how many per-task requests run at once against a
// JobHistory server.
const restConcurrency = 4

// restClient issues GETs with a context and decodes JSON bodies.
type restClient struct {
	hc     *http.Client
	skip   func(ctx context.Context, id string) (bool, error)
	maxJob int64
}

func newRESTClient(o Options) *restClient {
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &restClient{hc: hc, skip: o.Skip, maxJob: o.MaxJobBytes}
}

// skipped asks the caller's Skip whether a listed job is wanted.
func (c *restClient) skipped(ctx context.Context, id string) (bool, error) {
	if c.skip == nil {
		return false, nil
	}
	skip, err := c.skip(ctx, id)
	if err != nil {
		return false, fmt.Errorf("check job %s: %w", id, err)
	}
	return skip, nil
}

// get decodes the JSON body of url into v (streamed, never buffered whole;
// at most maxResponseBytes and maxNesting levels).
func (c *restClient) get(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL
		}
		return fmt.Errorf("get %s: %w: %w", u, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("get %s: %w: %s", u, ErrHTTP, resp.Status)
	}
	dec := json.NewDecoder(&capReader{r: &nestingReader{r: resp.Body}, limit: maxResponseBytes})
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, errTooBig) {
			err = fmt.Errorf("%w: response larger than %d MiB", ErrTooLarge, maxResponseBytes>>20)
		}
		return fmt.Errorf("decode %s: %w", u, err)
	}
	return nil
}

func isNotFound(err error) bool {
	return errors.Is(err, ErrHTTP) && strings.Contains(err.Error(), "404")
}

// fetchURL reads the jobs a history server URL names:
//
//	…/ws/v1/history[/mapreduce/jobs[/{jobid}]]  JobHistory server: one job or every finished job
//	…/api/v1[/applications[/{appid}]]           Spark History Server: one app or every completed app
//	http://host:port                            probed: JobHistory first, then Spark History Server
func fetchURL(ctx context.Context, o Options, raw string, fn func(*job.Job) error) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("parse url: %w", err)
	}
	c := newRESTClient(o)
	p := strings.TrimRight(u.Path, "/")
	switch {
	case strings.Contains(p, "/ws/v1/history"):
		return fetchJHS(ctx, c, u, fn)
	case strings.Contains(p, "/api/v1"):
		return fetchSHS(ctx, c, u, fn)
	}
	base := *u
	base.Path = p + "/ws/v1/history/info"
	var info struct {
		HistoryInfo *json.RawMessage `json:"historyInfo"`
	}
	err = c.get(ctx, base.String(), &info)
	if err == nil && info.HistoryInfo != nil {
		base.Path = p + "/ws/v1/history/mapreduce/jobs"
		return fetchJHS(ctx, c, &base, fn)
	}
	if errors.Is(err, ErrUnreachable) {
		return fmt.Errorf("probe %s: %w", raw, err)
	}
	base.Path = p + "/api/v1/applications"
	var apps []json.RawMessage
	err = c.get(ctx, base.String(), &apps)
	if err == nil {
		return fetchSHS(ctx, c, &base, fn)
	}
	if errors.Is(err, ErrUnreachable) {
		return fmt.Errorf("probe %s: %w", raw, err)
	}
	return fmt.Errorf("probe %s: %w: neither a JobHistory server nor a Spark History Server", raw, ErrUnknownFormat)
}

// ---- JobHistory server (MapReduce) REST API, /ws/v1/history/mapreduce ----

type jhsJob struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	User        string `json:"user"`
	Queue       string `json:"queue"`
	State       string `json:"state"`
	SubmitTime  int64  `json:"submitTime"`
	StartTime   int64  `json:"startTime"`
	FinishTime  int64  `json:"finishTime"`
	Diagnostics string `json:"diagnostics"`
}

type jhsCounterGroup struct {
	Name     string `json:"counterGroupName"`
	Counters []struct {
		Name  string `json:"name"`
		Total *int64 `json:"totalCounterValue"`
		Value *int64 `json:"value"`
	} `json:"counter"`
}

func flattenJHS(groups []jhsCounterGroup) job.Counters {
	c := job.Counters{}
	for _, g := range groups {
		for _, k := range g.Counters {
			if _, dup := c[k.Name]; dup {
				continue
			}
			switch {
			case k.Total != nil:
				c[k.Name] = *k.Total
			case k.Value != nil:
				c[k.Name] = *k.Value
			}
		}
	}
	return c
}

type jhsTask struct {
	ID                string `json:"id"`
	Type              string `json:"type"`
	State             string `json:"state"`
	SuccessfulAttempt string `json:"successfulAttempt"`
}

type jhsAttempt struct {
	ID                string `json:"id"`
	Type              string `json:"type"`
	State             string `json:"state"`
	StartTime         int64  `json:"startTime"`
	FinishTime        int64  `json:"finishTime"`
	ShuffleFinishTime int64  `json:"shuffleFinishTime"`
	MergeFinishTime   int64  `json:"mergeFinishTime"`
	ElapsedShuffle    int64  `json:"elapsedShuffleTime"`
	ElapsedMerge      int64  `json:"elapsedMergeTime"`
	Diagnostics       string `json:"diagnostics"`
	NodeHTTPAddress   string `json:"nodeHttpAddress"`
}

// fetchJHS reads one job (URL ends in /jobs/{jobid}) or every finished job
// the server lists.
func fetchJHS(ctx context.Context, c *restClient, u *url.URL, fn func(*job.Job) error) error {
	p := strings.TrimRight(u.Path, "/")
	root := p
	if i := strings.Index(p, "/ws/v1/history"); i >= 0 {
		root = p[:i] + "/ws/v1/history/mapreduce/jobs"
	}
	base := *u
	base.RawQuery = ""
	at := func(path string) string { b := base; b.Path = path; return b.String() }
	if rest, ok := strings.CutPrefix(p, root+"/"); ok && rest != "" {
		id, _, _ := strings.Cut(rest, "/")
		j, err := fetchJHSJob(ctx, c, at(root+"/"+id), id)
		if err != nil {
			return err
		}
		return fn(j)
	}
	var list struct {
		Jobs struct {
			Job []jhsJob `json:"job"`
		} `json:"jobs"`
	}
	listURL := base
	listURL.Path = root
	listURL.RawQuery = u.RawQuery
	if err := c.get(ctx, listURL.String(), &list); err != nil {
		return fmt.Errorf("list jobs: %w", err)
	}
	for _, lj := range list.Jobs.Job {
		if !finishedState(lj.State) {
			continue
		}
		if skip, err := c.skipped(ctx, lj.ID); err != nil {
			return err
		} else if skip {
			continue
		}
		j, err := fetchJHSJob(ctx, c, at(root+"/"+lj.ID), lj.ID)
		if err != nil {
			return err
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	return nil
}

func finishedState(s string) bool {
	switch strings.ToUpper(s) {
	case "SUCCEEDED", "FAILED", "KILLED":
		return true
	}
	return false
}

func fetchJHSJob(ctx context.Context, c *restClient, jobURL, id string) (*job.Job, error) {
	var info struct {
		Job jhsJob `json:"job"`
	}
	if err := c.get(ctx, jobURL, &info); err != nil {
		return nil, fmt.Errorf("fetch job %s: %w", id, err)
	}
	jj := info.Job
	if jj.ID == "" {
		jj.ID = id
	}
	j := &job.Job{
		ID: jj.ID, AppID: appIDFromJobID(jj.ID), Type: job.MapReduce, Name: jj.Name,
		User: jj.User, Queue: jj.Queue, SubmitMs: jj.SubmitTime, StartMs: jj.StartTime,
		FinishMs: jj.FinishTime, Status: attemptStatus(jj.State, job.Unknown),
		Diagnostics: jj.Diagnostics, Source: jobURL, Conf: map[string]string{},
	}
	var conf struct {
		Conf struct {
			Property []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"property"`
		} `json:"conf"`
	}
	if err := c.get(ctx, jobURL+"/conf", &conf); err != nil {
		j.Warnings = append(j.Warnings, fmt.Sprintf("job conf unavailable: %v", err))
	}
	for _, p := range conf.Conf.Property {
		j.Conf[p.Name] = p.Value
	}
	var counters struct {
		JobCounters struct {
			Groups []jhsCounterGroup `json:"counterGroup"`
		} `json:"jobCounters"`
	}
	if err := c.get(ctx, jobURL+"/counters", &counters); err != nil {
		j.Warnings = append(j.Warnings, fmt.Sprintf("job counters unavailable: %v", err))
	} else {
		j.Counters = flattenJHS(counters.JobCounters.Groups)
	}
	var tasks struct {
		Tasks struct {
			Task []jhsTask `json:"task"`
		} `json:"tasks"`
	}
	if err := c.get(ctx, jobURL+"/tasks", &tasks); err != nil {
		return nil, fmt.Errorf("fetch tasks of %s: %w", id, err)
	}
	out := make([]job.Task, len(tasks.Tasks.Task))
	errs := make([]error, len(tasks.Tasks.Task))
	sem := make(chan struct{}, restConcurrency)
	var wg sync.WaitGroup
	// The tasks' details are the job's memory: charge them as they come
	// and stop fetching once the job is over its budget.
	mem := newBudget(c.maxJob)
	mem.counters(j.Counters)
	var memMu sync.Mutex
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, t := range tasks.Tasks.Task {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = fetchJHSTask(tctx, c, jobURL+"/tasks/"+t.ID, t)
			memMu.Lock()
			if !mem.task(&out[i]) {
				cancel()
			}
			memMu.Unlock()
		}()
	}
	wg.Wait()
	if mem.err != nil {
		return nil, fmt.Errorf("fetch tasks of %s: %w", id, mem.err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fetch tasks of %s: %w", id, err)
	}
	for _, t := range out {
		if t.Kind == job.MapTask {
			j.MapTasks = append(j.MapTasks, t)
		} else {
			j.ReduceTasks = append(j.ReduceTasks, t)
		}
	}
	if j.Status == job.Failed {
		j.Diagnostics = restFailureDiagnostics(j)
	}
	return j, nil
}

func fetchJHSTask(ctx context.Context, c *restClient, taskURL string, jt jhsTask) (job.Task, error) {
	t := job.Task{ID: jt.ID, Kind: taskKind(jt.Type, jt.ID), Status: attemptStatus(jt.State, job.Unknown)}
	if t.Kind == "" {
		t.Kind = job.ReduceTask
	}
	var tc struct {
		C struct {
			Groups []jhsCounterGroup `json:"taskCounterGroup"`
		} `json:"jobTaskCounters"`
	}
	if err := c.get(ctx, taskURL+"/counters", &tc); err != nil {
		if !isNotFound(err) {
			return t, err
		}
	} else {
		t.Counters = flattenJHS(tc.C.Groups)
	}
	var as struct {
		A struct {
			Attempt []jhsAttempt `json:"taskAttempt"`
		} `json:"taskAttempts"`
	}
	if err := c.get(ctx, taskURL+"/attempts", &as); err != nil {
		if !isNotFound(err) {
			return t, err
		}
	}
	for _, a := range as.A.Attempt {
		at := job.Attempt{
			ID: a.ID, Status: attemptStatus(a.State, job.Unknown), Host: a.NodeHTTPAddress,
			StartMs: a.StartTime, FinishMs: a.FinishTime, Diagnostics: a.Diagnostics,
		}
		if t.Kind == job.ReduceTask {
			switch {
			case a.ShuffleFinishTime > 0:
				at.ShuffleFinishMs = a.ShuffleFinishTime
				at.SortFinishMs = a.MergeFinishTime
			case a.ElapsedShuffle > 0 || a.ElapsedMerge > 0:
				at.ShuffleFinishMs = a.StartTime + a.ElapsedShuffle
				at.SortFinishMs = at.ShuffleFinishMs + a.ElapsedMerge
			}
		}
		t.Attempts = append(t.Attempts, at)
	}
	if t.Status == job.Succeeded && jt.SuccessfulAttempt != "" {
		t.Analyzed = jt.SuccessfulAttempt
		if t.AnalyzedAttempt() == nil {
			t.Analyzed = ""
		}
	} else {
		t.Analyzed = analyzedAttempt(t.Status, t.Attempts)
	}
	return t, nil
}

// restFailureDiagnostics picks the stack trace of the task named in a failed
// job's diagnostics (Dr. Elephant's rule), else the job's text.
func restFailureDiagnostics(j *job.Job) string {
	tid := taskIDInText.FindString(j.Diagnostics)
	if tid == "" {
		return j.Diagnostics
	}
	for _, ts := range [][]job.Task{j.MapTasks, j.ReduceTasks} {
		for i := range ts {
			if ts[i].ID != tid {
				continue
			}
			if a := ts[i].AnalyzedAttempt(); a != nil && a.Diagnostics != "" {
				return a.Diagnostics
			}
		}
	}
	return j.Diagnostics
}

// ---- Spark History Server REST API, /api/v1 ----

// fetchSHS reads one application (URL ends in /applications/{id}) or every
// completed application the server lists.
func fetchSHS(ctx context.Context, c *restClient, u *url.URL, fn func(*job.Job) error) error {
	p := strings.TrimRight(u.Path, "/")
	i := strings.Index(p, "/api/v1")
	root := p[:i] + "/api/v1/applications"
	base := *u
	base.RawQuery = ""
	at := func(path string) string { b := base; b.Path = path; return b.String() }
	if rest, ok := strings.CutPrefix(p, root+"/"); ok && rest != "" {
		id, _, _ := strings.Cut(rest, "/")
		j, err := fetchSHSApp(ctx, c, at, root, id)
		if err != nil {
			return err
		}
		return fn(j)
	}
	listURL := base
	listURL.Path = root
	q := u.Query()
	if q.Get("status") == "" {
		q.Set("status", "completed")
	}
	listURL.RawQuery = q.Encode()
	var apps []sparkApp
	if err := c.get(ctx, listURL.String(), &apps); err != nil {
		return fmt.Errorf("list applications: %w", err)
	}
	for _, a := range apps {
		if skip, err := c.skipped(ctx, a.ID); err != nil {
			return err
		} else if skip {
			continue
		}
		j, err := fetchSHSApp(ctx, c, at, root, a.ID)
		if err != nil {
			return err
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	return nil
}

func fetchSHSApp(ctx context.Context, c *restClient, at func(string) string, root, id string) (*job.Job, error) {
	appURL := at(root + "/" + id)
	var app sparkApp
	if err := c.get(ctx, appURL, &app); err != nil {
		return nil, fmt.Errorf("fetch application %s: %w", id, err)
	}
	if app.ID == "" {
		app.ID = id
	}
	// The last attempt (by start time) is the one analysed.
	base := root + "/" + id
	var last *sparkAttempt
	for i := range app.Attempts {
		if last == nil || app.Attempts[i].start() > last.start() {
			last = &app.Attempts[i]
		}
	}
	if last != nil && last.AttemptID != "" {
		base += "/" + last.AttemptID
	}
	var warns []string
	var jobs []*sparkJob
	if err := c.get(ctx, at(base+"/jobs"), &jobs); err != nil {
		return nil, fmt.Errorf("fetch jobs of %s: %w", id, err)
	}
	var stages []*sparkStage
	if err := c.get(ctx, at(base+"/stages"), &stages); err != nil {
		return nil, fmt.Errorf("fetch stages of %s: %w", id, err)
	}
	var execs []*sparkExecutor
	if err := c.get(ctx, at(base+"/allexecutors"), &execs); err != nil {
		if !isNotFound(err) {
			return nil, fmt.Errorf("fetch executors of %s: %w", id, err)
		}
		if err := c.get(ctx, at(base+"/executors"), &execs); err != nil {
			return nil, fmt.Errorf("fetch executors of %s: %w", id, err)
		}
	}
	var env struct {
		Spark  [][]string `json:"sparkProperties"`
		System [][]string `json:"systemProperties"`
	}
	if err := c.get(ctx, at(base+"/environment"), &env); err != nil {
		warns = append(warns, fmt.Sprintf("environment unavailable (Spark properties unknown): %v", err))
	}
	app.Props = pairs(env.Spark)
	if len(env.System) > 0 {
		app.SysProps = pairs(env.System)
	}
	sortExecutors(execs)
	app.Jobs, app.Stages, app.Executors = jobs, stages, execs
	return app.toJob(appURL, warns), nil
}

// pairs turns the history server's [[key, value], …] lists into a map.
func pairs(kvs [][]string) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		if len(kv) == 2 {
			m[kv[0]] = kv[1]
		}
	}
	return m
}
