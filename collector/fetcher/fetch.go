package fetcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// Fetch reads the jobs in source and hands each to fn as soon as it is read.
// source is a file, a directory (walked; every file in a recognised format
// is read, others are skipped) or an http(s) URL of a JobHistory server or a
// Spark History Server. An error from fn stops the fetch and is returned as
// is. Problems that did not stop a read (truncated input, missing conf) are
// in the job's Warnings; files in a directory that cannot be read at all
// are reported together, after every readable file was fetched.
func Fetch(ctx context.Context, source string, fn func(*job.Job) error) error {
	return Options{}.Fetch(ctx, source, fn)
}

// Options adjust a fetch; the zero value is what the package-level Fetch
// uses.
type Options struct {
	// HTTPClient talks to history servers (TLS, authentication, timeouts);
	// default: a client with a 60 s timeout.
	HTTPClient *http.Client
	// Skip, when set, is asked with a job's id (MapReduce) or application
	// id (Spark) before a history server's listed job is fetched in detail;
	// true skips it. A poller passes "already analysed" here so it does not
	// re-download every known job at every poll. Files are always read.
	Skip func(ctx context.Context, id string) (bool, error)
	// MaxJobBytes bounds the memory one job's model may take (estimated);
	// a job past it is not handed to fn, its input fails with ErrTooLarge.
	// Default DefaultMaxJobBytes.
	MaxJobBytes int64
}

// Fetch is the package-level Fetch with these options.
func (o Options) Fetch(ctx context.Context, source string, fn func(*job.Job) error) error {
	if strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://") {
		return fetchURL(ctx, o, source, fn)
	}
	st, err := os.Stat(source)
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	if !st.IsDir() {
		return unwrapStop(o.fetchFileAs(ctx, source, callerFn(fn), true))
	}
	return o.fetchDir(ctx, source, fn)
}

// stopError marks an error returned by the caller's fn, which must stop a
// directory walk instead of being collected.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

func callerFn(fn func(*job.Job) error) func(*job.Job) error {
	return func(j *job.Job) error {
		if err := fn(j); err != nil {
			return stopError{err}
		}
		return nil
	}
}

func unwrapStop(err error) error {
	var s stopError
	if errors.As(err, &s) {
		return s.err
	}
	return err
}

func (o Options) fetchDir(ctx context.Context, dir string, fn func(*job.Job) error) error {
	wrapped := callerFn(fn)
	var errs []error
	walkErr := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, fmt.Errorf("walk %s: %w", path, err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && strings.HasPrefix(name, ".") {
				return fs.SkipDir
			}
			if strings.HasPrefix(name, rollingDirPrefix) {
				if err := o.fetchRolling(ctx, path, wrapped); err != nil {
					var s stopError
					if errors.As(err, &s) {
						return err
					}
					errs = append(errs, err)
				}
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || skipName(name) {
			return nil
		}
		err = o.fetchFileAs(ctx, path, wrapped, false)
		var s stopError
		switch {
		case err == nil:
		case errors.As(err, &s):
			return err
		case errors.Is(err, ErrUnknownFormat):
			// Not a history file: a directory may hold anything.
		default:
			errs = append(errs, err)
		}
		return nil
	})
	if walkErr != nil {
		return unwrapStop(walkErr)
	}
	return errors.Join(errs...)
}

// skipName reports files a walk never reads on their own: job confs (read
// with their history), summaries, checksums, hidden files.
func skipName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "_conf.xml") ||
		strings.HasSuffix(name, ".summary") || strings.HasSuffix(name, ".crc") ||
		strings.HasPrefix(name, rollingStatusPrefix)
}

// input formats recognised by sniffing.
const (
	formatUnknown = iota
	formatJhist
	formatSparkLog
	formatRumen
)

// sniff classifies a stream by its first bytes.
func sniff(head []byte) int {
	h := bytes.TrimLeft(head, " \t\r\n\ufeff")
	switch {
	case bytes.HasPrefix(h, []byte(jhistMagic)), bytes.HasPrefix(h, []byte(jhistBinaryMagic)):
		return formatJhist
	case len(h) == 0 || h[0] != '{':
		return formatUnknown
	}
	if _, ok := eventName(h); ok {
		return formatSparkLog
	}
	if bytes.Contains(h, []byte(`"jobID"`)) {
		return formatRumen
	}
	return formatUnknown
}

// ctxReader fails reads once ctx is done, so a long parse stops soon after
// its fetch is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// isJSONName reports a .json or .json.gz file name (rumen's).
func isJSONName(path string) bool {
	p := strings.TrimSuffix(strings.ToLower(path), ".gz")
	return strings.HasSuffix(p, ".json")
}

// fetchFileAs reads one file. explicit says the caller named the file, so a
// file in an unknown format is an error worth its own message.
func (o Options) fetchFileAs(ctx context.Context, path string, fn func(*job.Job) error, explicit bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if strings.HasSuffix(path, "_conf.xml") {
		return fmt.Errorf("read %s: %w: a job conf is read with its .jhist", path, ErrUnknownFormat)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open history file: %w", err)
	}
	defer f.Close()
	dr, closeDec, err := decompress(ctxReader{ctx, f}, codecOf(filepath.Base(path)))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer closeDec()
	br := bufio.NewReaderSize(dr, 256<<10)
	head, perr := br.Peek(4096)
	if len(head) == 0 {
		if perr == nil || errors.Is(perr, io.EOF) {
			return fmt.Errorf("read %s: %w: empty file", path, ErrUnknownFormat)
		}
		if errors.Is(perr, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read %s: %w: compressed stream cut short before its first block", path, ErrCorrupt)
		}
		return fmt.Errorf("read %s: %w", path, perr)
	}
	format := sniff(head)
	if format == formatUnknown && isJSONName(path) && bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")) {
		format = formatRumen // a rumen job whose jobID comes late in the object
	}
	switch format {
	case formatJhist:
		j, err := parseJhistBudget(br, true, newBudget(o.MaxJobBytes))
		if err := ctx.Err(); err != nil {
			return err // the parse stopped because the fetch was cancelled
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		j.Source = path
		attachConf(j, path)
		return fn(j)
	case formatSparkLog:
		app, warns, err := parseSparkLogBudget(br, newBudget(o.MaxJobBytes))
		if err := ctx.Err(); err != nil {
			return err
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if strings.HasSuffix(path, ".inprogress") {
			warns = append(warns, "event log is in progress (.inprogress)")
		}
		return fn(app.toJob(path, warns))
	case formatRumen:
		live := func(j *job.Job) error {
			if err := ctx.Err(); err != nil {
				return stopError{err}
			}
			return fn(j)
		}
		if err := parseRumenLimit(br, path, o.MaxJobBytes, live); err != nil {
			var s stopError
			if errors.As(err, &s) {
				return err
			}
			return fmt.Errorf("read %s: %w", path, err)
		}
		return nil
	}
	if explicit {
		return fmt.Errorf("read %s: %w: not a job history, rumen trace or Spark event log", path, ErrUnknownFormat)
	}
	return ErrUnknownFormat
}

// attachConf reads the job's _conf.xml from beside its history file (both
// the done and the done_intermediate layouts keep them together).
func attachConf(j *job.Job, histPath string) {
	dir := filepath.Dir(histPath)
	cands := []string{filepath.Join(dir, j.ID+"_conf.xml")}
	if m, _ := filepath.Glob(filepath.Join(dir, "*"+j.ID+"*_conf.xml")); len(m) > 0 {
		cands = append(cands, m...)
	}
	for _, c := range cands {
		f, err := os.Open(c)
		if err != nil {
			continue
		}
		conf, err := parseConfXML(bufio.NewReader(f))
		f.Close()
		if err != nil {
			j.Warnings = append(j.Warnings, fmt.Sprintf("job conf %s: %v", filepath.Base(c), err))
		}
		for k, v := range conf {
			j.Conf[k] = v
		}
		return
	}
	j.Warnings = append(j.Warnings, "no "+j.ID+"_conf.xml beside the job history; configuration unknown")
}

// Spark 3 rolling event logs: a directory eventlog_v2_<appid> holding an
// appstatus_<appid>[.inprogress] marker and parts events_<n>_<appid>[.codec]
// (n from 1), possibly with compacted parts events_<n>_<appid>.compact that
// replace every part up to n.
const (
	rollingDirPrefix    = "eventlog_v2_"
	rollingStatusPrefix = "appstatus_"
	rollingPartPrefix   = "events_"
)

type rollingPart struct {
	index   int
	compact bool
	path    string
}

func (o Options) fetchRolling(ctx context.Context, dir string, fn func(*job.Job) error) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read rolling event log %s: %w", dir, err)
	}
	var parts []rollingPart
	inProgress := false
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, rollingStatusPrefix) && strings.HasSuffix(name, ".inprogress") {
			inProgress = true
		}
		rest, ok := strings.CutPrefix(name, rollingPartPrefix)
		if !ok || e.IsDir() {
			continue
		}
		num, _, _ := strings.Cut(rest, "_")
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		parts = append(parts, rollingPart{index: n, compact: strings.Contains(name, ".compact"), path: filepath.Join(dir, name)})
	}
	if len(parts) == 0 {
		return fmt.Errorf("read rolling event log %s: %w: no events_* parts", dir, ErrNoJob)
	}
	sort.Slice(parts, func(i, k int) bool { return parts[i].index < parts[k].index })
	from := 0
	for i, p := range parts {
		if p.compact {
			from = i
		}
	}
	parts = parts[from:]
	var warns []string
	for i := 1; i < len(parts); i++ {
		if parts[i].index != parts[i-1].index+1 {
			warns = append(warns, fmt.Sprintf("rolling event log: part %d missing", parts[i-1].index+1))
		}
	}
	cr := &chainReader{parts: parts}
	defer cr.close()
	app, w, err := parseSparkLogBudget(ctxReader{ctx, cr}, newBudget(o.MaxJobBytes))
	if err := ctx.Err(); err != nil {
		return stopError{err}
	}
	if err != nil {
		return fmt.Errorf("read rolling event log %s: %w", dir, err)
	}
	warns = append(warns, w...)
	if inProgress {
		warns = append(warns, "rolling event log is in progress (appstatus .inprogress)")
	}
	return fn(app.toJob(dir, warns))
}

// chainReader reads the parts of a rolling event log one after another,
// opening each only when the previous one is exhausted.
type chainReader struct {
	parts []rollingPart
	cur   io.Reader
	f     *os.File
	done  func()
}

func (c *chainReader) Read(p []byte) (int, error) {
	for {
		if c.cur == nil {
			if len(c.parts) == 0 {
				return 0, io.EOF
			}
			part := c.parts[0]
			c.parts = c.parts[1:]
			f, err := os.Open(part.path)
			if err != nil {
				return 0, fmt.Errorf("open event log part: %w", err)
			}
			r, done, err := decompress(f, codecOf(filepath.Base(part.path)))
			if err != nil {
				f.Close()
				return 0, err
			}
			c.f, c.cur, c.done = f, r, done
		}
		n, err := c.cur.Read(p)
		if errors.Is(err, io.EOF) {
			c.close()
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (c *chainReader) close() {
	if c.done != nil {
		c.done()
		c.done = nil
	}
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	c.cur = nil
}
