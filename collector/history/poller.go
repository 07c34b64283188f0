package history

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/job"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Sink stores analysis results; the collector's store satisfies it.
type Sink interface {
	HasJob(ctx context.Context, id string) (bool, error)
	PutJob(ctx context.Context, r *stratav1.JobResult) error
}

// Analyzer turns a job into its analysis (the collector's runs the
// heuristics engine, reading the application's traces from the store). An
// error leaves the job unanalysed: the poll stops with it, and the job is
// tried again at the next poll.
type Analyzer interface {
	Analyze(ctx context.Context, j *job.Job) (*stratav1.JobResult, error)
}

// AnalyzerFunc adapts a function to Analyzer.
type AnalyzerFunc func(ctx context.Context, j *job.Job) (*stratav1.JobResult, error)

// Analyze implements Analyzer.
func (f AnalyzerFunc) Analyze(ctx context.Context, j *job.Job) (*stratav1.JobResult, error) {
	return f(ctx, j)
}

// Claimer shares the jobs of the same histories among several
// collectors: each job is analysed by the one collector whose claim on it
// won. The collector's ClickHouse store satisfies it (through
// collector/server); a single collector needs none.
type Claimer interface {
	// JobClaims returns the live claims on jobs.
	JobClaims(ctx context.Context) (map[string]Claim, error)
	// ClaimJobs claims ids for this collector.
	ClaimJobs(ctx context.Context, ids []string) error
}

// Claim is the state of the claims on one job.
type Claim struct {
	// Mine: this collector's claim is the winning one.
	Mine bool
	// Decided: the winner no longer changes while its lease lasts.
	Decided bool
}

// FetchFunc reads the jobs of one source (fetcher.Fetch's signature).
type FetchFunc func(ctx context.Context, source string, fn func(*job.Job) error) error

// Config configures a Poller.
type Config struct {
	// Sources are directories, files and history-server URLs.
	Sources []string
	// Interval between polls; default 60 s (Dr. Elephant's fetch interval).
	Interval time.Duration
	// SettleRounds is how many polls an unfinished job's input must stay
	// unchanged before it is analysed as it stands; default 3.
	SettleRounds int
	// Logger; default slog.Default().
	Logger *slog.Logger
	// HTTPClient talks to history servers (TLS, authentication); default
	// the fetcher's.
	HTTPClient *http.Client
	// MaxJobBytes bounds the memory of one job's model (fetcher.Options);
	// 0 takes the fetcher's default. A job over it is reported and skipped.
	MaxJobBytes int64
	// Fetch reads a source; default fetcher.Options{HTTPClient, Skip:
	// sink.HasJob, MaxJobBytes}.Fetch.
	Fetch FetchFunc
	// Now returns the analysis time; default time.Now.
	Now func() time.Time
	// Claims, when set, makes the poller analyse only the jobs it won a
	// claim on: a job nobody claims is claimed (all of a poll's claims in
	// one call at its end) and waits; a job whose decided winner is this
	// collector is analysed; one another collector won, or whose claim is
	// not decided yet, waits — its unit is read again at the next poll,
	// until the winner has stored the job or its lease ran out.
	Claims Claimer
	// OnPoll, when set, hears how each poll of Run went and how long it
	// took (the collector's metrics).
	OnPoll func(st Stats, err error, took time.Duration)
}

// ErrNoSources is returned by New when no source is configured.
var ErrNoSources = errors.New("no history sources configured")

// Poller polls history sources. It is not safe for concurrent Poll calls.
type Poller struct {
	cfg      Config
	analyzer Analyzer
	sink     Sink
	log      *slog.Logger
	// done holds the fingerprint of every unit (file, rolling log dir)
	// whose jobs were all handled.
	done map[string]string
	// pending counts the polls an unfinished unit stayed unchanged.
	pending map[string]pendingUnit
	// failed remembers the last failure of every unit that could not be
	// read, so each failure is counted and logged once.
	failed map[string]failure
	// claims are the live claims read at the start of a poll (with
	// Config.Claims); proposed the jobs this poll claims at its end.
	claims   map[string]Claim
	proposed []string
}

// failure is a unit's last read failure. A file whose content failed is
// not read again until its fingerprint changes; a failure to reach the
// input (open, stat, a history server) is retried at every poll.
type failure struct {
	fingerprint string
	msg         string
	retry       bool
}

type pendingUnit struct {
	fingerprint string
	rounds      int
}

// Stats counts what one poll did.
type Stats struct {
	Units    int // files, rolling-log dirs and URLs read
	Skipped  int // units unchanged since handled
	Analyzed int // jobs analysed and stored
	Known    int // jobs the sink already had
	Deferred int // unfinished jobs left for a later poll
	Ignored  int // killed jobs
	Errors   int // units that failed, counted at their first failure
	Failed   int // units skipped: they failed before and have not changed
	// Claimed counts jobs left waiting on a claim (Config.Claims): claimed
	// by this poll, won by another collector, or not decided yet.
	Claimed int
}

// New returns a poller of cfg.Sources that analyses with a and stores into s.
func New(cfg Config, a Analyzer, s Sink) (*Poller, error) {
	if len(cfg.Sources) == 0 {
		return nil, ErrNoSources
	}
	if a == nil || s == nil {
		return nil, errors.New("new poller: analyzer and sink are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 60 * time.Second
	}
	if cfg.SettleRounds <= 0 {
		cfg.SettleRounds = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Fetch == nil {
		// History servers list every job they keep: ask the sink before
		// downloading one in detail.
		cfg.Fetch = fetcher.Options{HTTPClient: cfg.HTTPClient, Skip: s.HasJob, MaxJobBytes: cfg.MaxJobBytes}.Fetch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Poller{
		cfg: cfg, analyzer: a, sink: s,
		log:     cfg.Logger.With("component", "history"),
		done:    map[string]string{},
		pending: map[string]pendingUnit{},
		failed:  map[string]failure{},
	}, nil
}

// Run polls at once and then every interval until ctx ends; it returns nil
// then. Errors of single sources are logged, never fatal.
func (p *Poller) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		start := time.Now()
		st, err := p.Poll(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if p.cfg.OnPoll != nil {
			p.cfg.OnPoll(st, err, time.Since(start))
		}
		if err != nil {
			p.log.Warn("poll failed", "err", err)
		}
		p.log.Debug("poll done", "units", st.Units, "skipped", st.Skipped, "analyzed", st.Analyzed,
			"known", st.Known, "deferred", st.Deferred, "claimed", st.Claimed, "errors", st.Errors, "failed", st.Failed)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads every source once. The error is the sink's or the analyzer's
// when a job could not be looked up, analysed or stored (the poll stops
// there, and the job is tried again next time); unreadable sources only
// count in Stats.
func (p *Poller) Poll(ctx context.Context) (st Stats, err error) {
	if p.cfg.Claims != nil {
		claims, err := p.cfg.Claims.JobClaims(ctx)
		if err != nil {
			return st, fmt.Errorf("read job claims: %w", err)
		}
		p.claims, p.proposed = claims, nil
		defer func() {
			if len(p.proposed) == 0 {
				return
			}
			if cerr := p.cfg.Claims.ClaimJobs(ctx, p.proposed); cerr != nil && err == nil {
				err = fmt.Errorf("claim jobs: %w", cerr)
			}
		}()
	}
	seen := map[string]bool{}
	for _, src := range p.cfg.Sources {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		units, err := units(src)
		if err != nil {
			st.Errors++
			p.log.Warn("list source", "source", src, "err", err)
			continue
		}
		for _, u := range units {
			seen[u.source] = true
			if err := p.pollUnit(ctx, u, &st); err != nil {
				return st, err
			}
		}
	}
	// Forget units that disappeared (rotated away, renamed from .inprogress).
	for src := range p.done {
		if !seen[src] {
			delete(p.done, src)
		}
	}
	for src := range p.pending {
		if !seen[src] {
			delete(p.pending, src)
		}
	}
	for src := range p.failed {
		if !seen[src] {
			delete(p.failed, src)
		}
	}
	return st, nil
}

// unit is one thing the fetcher reads: a file, a rolling-log directory or
// a URL; fingerprint is "" when it cannot be known (URLs).
type unit struct {
	source      string
	fingerprint string
}

// units lists the units of a source: the source itself unless it is a
// plain directory, whose files and rolling-log directories are listed.
func units(src string) ([]unit, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		return []unit{{source: src}}, nil
	}
	st, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("stat source: %w", err)
	}
	if !st.IsDir() {
		return []unit{{source: src, fingerprint: stamp(st)}}, nil
	}
	if strings.HasPrefix(st.Name(), "eventlog_v2_") {
		return []unit{rollingUnit(src)}, nil
	}
	var out []unit
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable subtree: skipped, retried next poll
		}
		name := d.Name()
		if d.IsDir() {
			if path != src && strings.HasPrefix(name, ".") {
				return fs.SkipDir
			}
			if strings.HasPrefix(name, "eventlog_v2_") {
				out = append(out, rollingUnit(path))
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "_conf.xml") || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		fp := stamp(info)
		if strings.HasSuffix(name, ".jhist") {
			// The conf arrives with (or after) the history: include it.
			if ci, err := os.Stat(confBeside(path)); err == nil {
				fp += "+" + stamp(ci)
			}
		}
		out = append(out, unit{source: path, fingerprint: fp})
		return nil
	})
	return out, err
}

func stamp(fi fs.FileInfo) string {
	return fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
}

// confBeside names the _conf.xml of a job history file from its job id
// (the file name up to the first '-').
func confBeside(hist string) string {
	base := filepath.Base(hist)
	id, _, _ := strings.Cut(base, "-")
	id = strings.TrimSuffix(id, ".jhist")
	return filepath.Join(filepath.Dir(hist), id+"_conf.xml")
}

func rollingUnit(dir string) unit {
	var fp strings.Builder
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			fmt.Fprintf(&fp, "%s:%s;", e.Name(), stamp(info))
		}
	}
	return unit{source: dir, fingerprint: fp.String()}
}

func finished(s job.Status) bool { return s == job.Succeeded || s == job.Failed }

func (p *Poller) pollUnit(ctx context.Context, u unit, st *Stats) error {
	if u.fingerprint != "" && p.done[u.source] == u.fingerprint {
		st.Skipped++
		return nil
	}
	if f, ok := p.failed[u.source]; ok && !f.retry && f.fingerprint == u.fingerprint {
		st.Failed++
		return nil
	}
	st.Units++
	settled := false
	if u.fingerprint != "" {
		pu := p.pending[u.source]
		if pu.fingerprint == u.fingerprint {
			pu.rounds++
		} else {
			pu = pendingUnit{fingerprint: u.fingerprint}
		}
		p.pending[u.source] = pu
		// An input its writer marks as in progress is never settled: the
		// application is running, however quiet its log.
		settled = pu.rounds >= p.cfg.SettleRounds-1 && !strings.Contains(u.fingerprint+u.source, ".inprogress")
	}
	var jobErr error
	deferred := false
	err := p.cfg.Fetch(ctx, u.source, func(j *job.Job) error {
		if j.Status == job.Killed {
			st.Ignored++
			return nil
		}
		has, err := p.sink.HasJob(ctx, j.ID)
		if err != nil {
			jobErr = fmt.Errorf("look up job %s: %w", j.ID, err)
			return jobErr
		}
		if has {
			st.Known++
			return nil
		}
		if !finished(j.Status) && !settled {
			st.Deferred++
			deferred = true
			return nil
		}
		if p.cfg.Claims != nil {
			c, claimed := p.claims[j.ID]
			if !claimed {
				p.proposed = append(p.proposed, j.ID)
			}
			if !c.Mine || !c.Decided {
				st.Claimed++
				deferred = true
				return nil
			}
		}
		r, err := p.analyzer.Analyze(ctx, j)
		if err != nil {
			jobErr = fmt.Errorf("analyze job %s: %w", j.ID, err)
			return jobErr
		}
		if r == nil {
			return nil
		}
		if r.Source == "" {
			r.Source = j.Source
		}
		r.AnalyzedUnixMs = p.cfg.Now().UnixMilli()
		if err := p.sink.PutJob(ctx, r); err != nil {
			jobErr = fmt.Errorf("store job %s: %w", j.ID, err)
			return jobErr
		}
		st.Analyzed++
		p.log.Info("job analysed", "job", j.ID, "type", j.Type, "severity", r.Severity.String(), "source", u.source)
		return nil
	})
	if jobErr != nil {
		return jobErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, fetcher.ErrUnknownFormat) && u.fingerprint != "" {
			p.done[u.source] = u.fingerprint // not a history file: ignore until it changes
			return nil
		}
		p.fail(u, err, st)
		return nil
	}
	delete(p.failed, u.source)
	if !deferred && u.fingerprint != "" {
		p.done[u.source] = u.fingerprint
		delete(p.pending, u.source)
	}
	return nil
}

// fail records that u could not be read. A unit is counted and logged at
// its first failure, and again only when it fails differently. Its
// content failing (not a history, corrupt, too deep, too large) skips it
// until it changes; failing to reach it is retried at the next poll.
func (p *Poller) fail(u unit, err error, st *Stats) {
	var pathErr *fs.PathError
	f := failure{fingerprint: u.fingerprint, msg: err.Error(),
		retry: u.fingerprint == "" || errors.As(err, &pathErr)}
	if prev, ok := p.failed[u.source]; ok && prev == f {
		return
	}
	p.failed[u.source] = f
	st.Errors++
	if f.retry {
		p.log.Warn("read history source; retrying at every poll", "source", u.source, "err", err)
		return
	}
	p.log.Warn("history file unreadable; skipped until it changes", "source", u.source, "err", err)
}
