package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"
)

// ErrInvalidConfig wraps every reason Validate refuses a configuration.
var ErrInvalidConfig = errors.New("invalid config")

// Config is what the collector needs to run.
type Config struct {
	// Listen is host:port for TCP, or unix:PATH for a Unix socket.
	Listen string `json:"listen"`
	// StoreDir holds the embedded database.
	StoreDir string `json:"store_dir"`
	// MemoryLimit caps DuckDB's memory, e.g. "1GB".
	MemoryLimit string `json:"memory_limit"`
	// Threads caps DuckDB's worker threads; 0 = one per core.
	Threads int `json:"threads"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// ShutdownGrace bounds GracefulStop before open streams are cut.
	ShutdownGrace Duration `json:"shutdown_grace"`
	// History lists job-history sources to poll: directories of MapReduce
	// histories or Spark event logs, and JobHistory / Spark History Server
	// URLs. Empty: no polling.
	History []string `json:"history"`
	// HistoryInterval is the time between polls.
	HistoryInterval Duration `json:"history_interval"`
	// HistoryMaxJobBytes bounds the memory one job's model may take while
	// it is read (estimated); a job over it is reported and skipped. 0 takes
	// the fetcher's default (1 GiB).
	HistoryMaxJobBytes int64 `json:"history_max_job_bytes"`
	// Heuristics is a YAML file overriding the heuristics' thresholds.
	Heuristics string `json:"heuristics"`

	// Security and observability (config_ops.go): who may connect, the
	// HTTP endpoint, profiling.
	Ops
}

// Duration is a time.Duration written as "10s" in JSON.
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("parse duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("parse duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// Defaults returns the configuration used when nothing overrides it.
func Defaults() Config {
	return Config{
		Listen:          "127.0.0.1:7070",
		StoreDir:        "/var/lib/strata/collector",
		MemoryLimit:     "1GB",
		LogLevel:        "info",
		ShutdownGrace:   Duration(10 * time.Second),
		HistoryInterval: Duration(time.Minute),
	}
}

// DecodeConfig overlays the JSON object in data on c; unknown keys are errors.
func DecodeConfig(data []byte, c *Config) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	if dec.More() {
		return errors.New("decode config: trailing data after the object")
	}
	return nil
}

// envPrefix starts every environment variable the collector reads.
const envPrefix = "STRATA_COLLECTOR_"

// ApplyEnv overlays STRATA_COLLECTOR_LISTEN, _STORE_DIR, _MEMORY_LIMIT,
// _THREADS, _LOG_LEVEL and _SHUTDOWN_GRACE when set.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	fs := c.flagSet(io.Discard)
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(name); v != "" && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("read %s: %w", name, e)
			}
		}
	})
	return err
}

// flagSet binds the settings' flags to c; env names derive from them.
func (c *Config) flagSet(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("strata-collector", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Listen, "listen", c.Listen, "gRPC listen address: host:port, or unix:PATH")
	fs.StringVar(&c.StoreDir, "store-dir", c.StoreDir, "directory of the embedded database")
	fs.StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, "DuckDB memory limit, e.g. 512MB or 2GB")
	fs.IntVar(&c.Threads, "threads", c.Threads, "DuckDB worker threads (0 = one per core)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	replaced := false // a list set here replaces the file's, then repeats append
	fs.Func("history", "job-history source to poll: a directory or a history-server URL (repeat, or separate with commas)", func(s string) error {
		if !replaced {
			c.History, replaced = nil, true
		}
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				c.History = append(c.History, v)
			}
		}
		return nil
	})
	fs.Func("history-interval", "time between job-history polls (default 1m)", func(s string) error {
		d, err := time.ParseDuration(s)
		c.HistoryInterval = Duration(d)
		return err
	})
	fs.Int64Var(&c.HistoryMaxJobBytes, "history-max-job-bytes", c.HistoryMaxJobBytes, "memory one job's model may take while read; larger jobs are skipped (0 = 1 GiB)")
	fs.StringVar(&c.Heuristics, "heuristics", c.Heuristics, "YAML file overriding heuristic thresholds")
	fs.Func("shutdown-grace", "how long running calls may finish on stop (default 10s)", func(s string) error {
		d, err := time.ParseDuration(s)
		c.ShutdownGrace = Duration(d)
		return err
	})
	c.Ops.flags(fs)
	return fs
}

// Load builds the configuration from defaults, the JSON file named by
// --config (or $STRATA_COLLECTOR_CONFIG), the environment, and the other flags in args, in that order of
// precedence (last wins), and validates it. Usage goes to out on -h.
func Load(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	// First pass: only --config, so the file sits under env and flags.
	pre := flag.NewFlagSet("strata-collector", flag.ContinueOnError)
	pre.SetOutput(io.Discard)
	path := pre.String("config", "", "")
	var scratch Config
	scratch.flagSet(io.Discard).VisitAll(func(f *flag.Flag) { pre.Var(f.Value, f.Name, f.Usage) })
	_ = pre.Parse(args) // errors are reported by the full parse below

	c := Defaults()
	if *path == "" {
		*path = getenv(envPrefix + "CONFIG")
	}
	if *path != "" {
		data, err := os.ReadFile(*path)
		if err != nil {
			return c, fmt.Errorf("read config: %w", err)
		}
		if err := DecodeConfig(data, &c); err != nil {
			return c, fmt.Errorf("%s: %w", *path, err)
		}
	}
	if err := c.ApplyEnv(getenv); err != nil {
		return c, err
	}
	fs := c.flagSet(out)
	fs.String("config", *path, "JSON configuration file (keys: listen, store_dir, memory_limit, threads, log_level, shutdown_grace, history, history_interval, history_max_job_bytes, heuristics, tls_cert, tls_key, tls_client_ca, token_file, insecure, http, pyroscope_server)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected arguments %q", ErrInvalidConfig, fs.Args())
	}
	return c, c.Validate()
}

var memoryLimitRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)

// Validate reports the first setting that cannot work, wrapped in
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Listen == "" || c.Listen == "unix:":
		return fmt.Errorf("%w: empty listen address", ErrInvalidConfig)
	case !strings.HasPrefix(c.Listen, "unix:") && !strings.Contains(c.Listen, ":"):
		return fmt.Errorf("%w: listen %q is neither host:port nor unix:PATH", ErrInvalidConfig, c.Listen)
	case c.StoreDir == "":
		return fmt.Errorf("%w: empty store dir", ErrInvalidConfig)
	case c.MemoryLimit != "" && !memoryLimitRE.MatchString(c.MemoryLimit):
		return fmt.Errorf("%w: memory limit %q is not a size like 512MB", ErrInvalidConfig, c.MemoryLimit)
	case c.Threads < 0:
		return fmt.Errorf("%w: negative threads %d", ErrInvalidConfig, c.Threads)
	case c.ShutdownGrace <= 0:
		return fmt.Errorf("%w: shutdown grace %v must be positive", ErrInvalidConfig, time.Duration(c.ShutdownGrace))
	case c.HistoryMaxJobBytes < 0:
		return fmt.Errorf("%w: history max job bytes %d is negative", ErrInvalidConfig, c.HistoryMaxJobBytes)
	case len(c.History) > 0 && c.HistoryInterval <= 0:
		return fmt.Errorf("%w: history interval %v must be positive", ErrInvalidConfig, time.Duration(c.HistoryInterval))
	}
	if _, err := c.Level(); err != nil {
		return err
	}
	return c.Ops.validate(c.Listen)
}

// Level returns LogLevel as a slog level.
func (c Config) Level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("%w: log level %q: want debug, info, warn or error", ErrInvalidConfig, c.LogLevel)
	}
	return l, nil
}
