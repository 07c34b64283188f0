// Command strata-gen writes synthetic job histories and Spark event logs
// (see package test/gen) for demos and benchmarks.
//
//	strata-gen -out DIR [-kind mr|spark] [-jobs N] [-maps N] [-reduces N] [-skew X] [-gc X] ...
//	strata-gen -h | --version
//
// Help goes to stdout with exit status 0; arguments it refuses go to
// stderr with exit status 2; a failure to write exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/klauspost/compress/zstd"
	"github.com/stratatrace/strata/test/gen"
)

// version is set at build time (-ldflags "-X main.version=..."; see the
// Makefile).
var version = "dev"

func main() {
	os.Exit(exitStatus(run(context.Background(), os.Args[1:], os.Stdout), os.Stderr))
}

// exitStatus prints err to stderr and returns the exit status: 0 without
// an error, 2 for refused arguments, 1 otherwise.
func exitStatus(err error, stderr io.Writer) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "strata-gen:", err)
		fmt.Fprintln(stderr, "Run 'strata-gen -h' for usage.")
		return 2
	}
	fmt.Fprintln(stderr, "strata-gen:", err)
	return 1
}

// errUsage marks arguments strata-gen refuses (exit status 2).
var errUsage = errors.New("usage")

// usageHead is the help above the flags.
const usageHead = `usage: strata-gen -out DIR [-kind mr|spark] [-jobs N] [flags]
       strata-gen --version

Writes synthetic jobs for demos and benchmarks: MapReduce job histories with their
configuration (-kind mr), or Spark event logs (-kind spark), optionally compressed as Spark
writes them. Each file written is printed on its own line.

example:
  strata-gen -out /tmp/logs -kind spark -jobs 3 -skew 4 && strata analyze /tmp/logs

flags:
`

func run(_ context.Context, args []string, stdout io.Writer) error {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		_, err := fmt.Fprintf(stdout, "strata-gen %s %s\n", version, runtime.Version())
		return err
	}
	fs := flag.NewFlagSet("strata-gen", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the returned error says why, exitStatus where the help is
	out := fs.String("out", "", "directory `DIR` to write into (required)")
	kind := fs.String("kind", "mr", "`KIND` of job: mr (job history + conf) or spark (event log)")
	jobs := fs.Int("jobs", 1, "`N` jobs or applications")
	maps := fs.Int("maps", 100, "`N` map tasks per MapReduce job")
	reduces := fs.Int("reduces", 10, "`N` reduce tasks per MapReduce job")
	tasks := fs.Int("tasks", 100, "`N` tasks per Spark stage")
	stages := fs.Int("stages", 2, "`N` stages per Spark application")
	skew := fs.Float64("skew", 0, "skew `FACTOR` of the slow tasks (>1 to skew)")
	gc := fs.Float64("gc", 0, "GC time / CPU time `RATIO`")
	container := fs.Int("container-mb", 0, "MapReduce container size in `MB`")
	used := fs.Int("used-mb", 0, "MapReduce task peak physical memory in `MB`")
	failed := fs.Bool("failed", false, "make MapReduce jobs fail")
	codec := fs.String("codec", "", "compress Spark event logs with `CODEC`: lz4, snappy or zstd (as Spark writes them)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageHead)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil
	} else if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if *out == "" {
		return fmt.Errorf("%w: missing -out", errUsage)
	}
	for _, c := range []struct {
		bad  bool
		what string
	}{
		{fs.NArg() > 0, fmt.Sprintf("unexpected arguments %q", fs.Args())},
		{*kind != "mr" && *kind != "spark", fmt.Sprintf("-kind %q: want mr or spark", *kind)},
		{*jobs < 1, fmt.Sprintf("-jobs %d: want at least 1", *jobs)},
		{*maps < 1, fmt.Sprintf("-maps %d: want at least 1", *maps)},
		{*reduces < 0, fmt.Sprintf("-reduces %d: want 0 or more", *reduces)},
		{*tasks < 1, fmt.Sprintf("-tasks %d: want at least 1", *tasks)},
		{*stages < 1, fmt.Sprintf("-stages %d: want at least 1", *stages)},
		{*skew < 0, fmt.Sprintf("-skew %g: want 0 (none) or more", *skew)},
		{*gc < 0, fmt.Sprintf("-gc %g: want 0 or more", *gc)},
		{*container < 0 || *used < 0, fmt.Sprintf("-container-mb %d, -used-mb %d: want 0 or more", *container, *used)},
		{*codec != "" && *kind != "spark", "-codec compresses Spark event logs: use it with -kind spark"},
		{*codec != "" && *codec != "lz4" && *codec != "snappy" && *codec != "zstd", fmt.Sprintf("-codec %q: want lz4, snappy or zstd", *codec)},
	} {
		if c.bad {
			return fmt.Errorf("%w: %s", errUsage, c.what)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	for i := 1; i <= *jobs; i++ {
		switch *kind {
		case "mr":
			p, err := gen.WriteMRJob(*out, gen.MRJob{
				JobID: fmt.Sprintf("job_1700000000000_%04d", i), Maps: *maps, Reduces: *reduces,
				Skew: *skew, GCRatio: *gc, ContainerMB: *container, UsedMB: *used, Failed: *failed,
				SubmitMs: 1700000000000 + int64(i)*600000, Seed: uint64(i),
			})
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, p)
		case "spark":
			app := fmt.Sprintf("application_1700000000000_%04d", i)
			p := filepath.Join(*out, app)
			if *codec != "" {
				p += "." + *codec
			}
			spec := gen.SparkApp{AppID: app, Stages: *stages, TasksPerStage: *tasks,
				Skew: *skew, GCRatio: *gc, StartMs: 1700000000000 + int64(i)*600000, Seed: uint64(i)}
			if err := writeSparkLog(p, *codec, spec); err != nil {
				return err
			}
			fmt.Fprintln(stdout, p)
		default:
			return fmt.Errorf("unknown -kind %q", *kind)
		}
	}
	return nil
}

// writeSparkLog writes one event log, compressed with codec ("" = plain).
func writeSparkLog(path, codec string, spec gen.SparkApp) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create event log: %w", err)
	}
	defer f.Close()
	var w io.WriteCloser
	switch codec {
	case "":
	case "lz4":
		w = gen.NewLZ4BlockWriter(f)
	case "snappy":
		w = gen.NewSnappyStreamWriter(f)
	case "zstd":
		if w, err = zstd.NewWriter(f); err != nil {
			return fmt.Errorf("open zstd writer: %w", err)
		}
	default:
		return fmt.Errorf("unknown -codec %q", codec)
	}
	if w == nil {
		err = gen.WriteSparkLog(f, spec)
	} else if err = gen.WriteSparkLog(w, spec); err == nil {
		err = w.Close()
	}
	if err != nil {
		return fmt.Errorf("write event log: %w", err)
	}
	return f.Close()
}
