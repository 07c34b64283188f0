package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stratatrace/strata/collector/query"
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
	// Nice is the nice value of the collector's threads (0 to 19): on a
	// node it shares with the work it observes, that work goes first.
	Nice int `json:"nice"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `json:"log_level"`
	// ShutdownGrace bounds GracefulStop before open streams are cut.
	ShutdownGrace Duration `json:"shutdown_grace"`
	// QueryTimeout is the deadline of every query call, gRPC or HTTP (the
	// client's own, when shorter, holds); 0: none.
	QueryTimeout Duration `json:"query_timeout"`
	// QueryMaxRows is the most rows one trace or records stream sends
	// (query.Bounds.MaxRows); 0: no bound.
	QueryMaxRows int64 `json:"query_max_rows"`
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

	// Store selects the backend: "duckdb" (embedded, one collector) or
	// "clickhouse" (a server several collectors share).
	Store string `json:"store"`
	// ClickHouseURL is the server's HTTP interface, http(s)://host:8123;
	// it may carry user:password.
	ClickHouseURL string `json:"clickhouse_url"`
	// ClickHouseDatabase holds the tables.
	ClickHouseDatabase string `json:"clickhouse_database"`
	// ClickHouseUser and ClickHousePassword override the URL's; the
	// password is best given as STRATA_COLLECTOR_CLICKHOUSE_PASSWORD.
	ClickHouseUser     string `json:"clickhouse_user"`
	ClickHousePassword string `json:"clickhouse_password"`
	// ClickHouseCluster names the cluster of the sharded and replicated
	// layout (strata clickhouse-schema --clickhouse-cluster prints its DDL); empty
	// for one server.
	ClickHouseCluster string `json:"clickhouse_cluster"`
	// ClickHouseCreateSchema creates the database and tables at start when
	// missing (ON CLUSTER in the cluster layout).
	ClickHouseCreateSchema bool `json:"clickhouse_create_schema"`
	// ClickHouseFlushInterval is the least time between group commits.
	ClickHouseFlushInterval Duration `json:"clickhouse_flush_interval"`
	// CollectorID names this collector in job claims; empty: the host
	// name and a random suffix.
	CollectorID string `json:"collector_id"`
	// HistoryClaimLease is how long a collector's claim on a job holds
	// before another collector may analyse it (ClickHouse only).
	HistoryClaimLease Duration `json:"history_claim_lease"`

	// RetentionMaxAge drops traces received longer ago; 0 keeps them.
	RetentionMaxAge Duration `json:"retention_max_age"`
	// RetentionMaxBytes drops the oldest day of traces while the store is
	// larger; 0 sets no bound.
	RetentionMaxBytes int64 `json:"retention_max_bytes"`
	// RetentionInterval is the time between retention passes.
	RetentionInterval Duration `json:"retention_interval"`

	// Security and observability (config_ops.go): who may connect, the
	// HTTP endpoint, profiling.
	Ops
}

// Store backends.
const (
	StoreDuckDB     = "duckdb"
	StoreClickHouse = "clickhouse"
)

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
		Nice:            10,
		ShutdownGrace:   Duration(10 * time.Second),
		QueryTimeout:    Duration(2 * time.Minute),
		QueryMaxRows:    query.DefaultMaxRows,
		HistoryInterval: Duration(time.Minute),

		Store:                   StoreDuckDB,
		ClickHouseDatabase:      "strata",
		ClickHouseCreateSchema:  true,
		ClickHouseFlushInterval: Duration(200 * time.Millisecond),
		HistoryClaimLease:       Duration(10 * time.Minute),
		RetentionInterval:       Duration(10 * time.Minute),
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

// ApplyEnv overlays, for every flag, STRATA_COLLECTOR_<FLAG> (upper case,
// - as _) when set: STRATA_COLLECTOR_LISTEN, _STORE_DIR, _STORE,
// _CLICKHOUSE_URL, _CLICKHOUSE_PASSWORD, ….
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
	fs.IntVar(&c.Nice, "nice", c.Nice, "nice value of the collector's threads, 0 to 19: work sharing its machine goes first")
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
	fs.Func("query-timeout", "deadline of every query call, gRPC or HTTP; 0 for none (default 2m)", func(s string) error {
		d, err := time.ParseDuration(s)
		c.QueryTimeout = Duration(d)
		return err
	})
	fs.Int64Var(&c.QueryMaxRows, "query-max-rows", c.QueryMaxRows, "most rows one trace or records request gets; a request without a limit ends there with a message (0: no bound)")
	fs.StringVar(&c.Store, "store", c.Store, "store backend: duckdb (embedded) or clickhouse (a server several collectors share)")
	fs.StringVar(&c.ClickHouseURL, "clickhouse-url", c.ClickHouseURL, "ClickHouse HTTP interface, http(s)://host:8123 (may carry user:password)")
	fs.StringVar(&c.ClickHouseDatabase, "clickhouse-database", c.ClickHouseDatabase, "ClickHouse database of the tables")
	fs.StringVar(&c.ClickHouseUser, "clickhouse-user", c.ClickHouseUser, "ClickHouse user (overrides the URL's)")
	fs.StringVar(&c.ClickHousePassword, "clickhouse-password", c.ClickHousePassword,
		"ClickHouse password (overrides the URL's; prefer $STRATA_COLLECTOR_CLICKHOUSE_PASSWORD)")
	fs.StringVar(&c.ClickHouseCluster, "clickhouse-cluster", c.ClickHouseCluster, "ClickHouse cluster of the sharded, replicated layout (empty: one server)")
	fs.BoolVar(&c.ClickHouseCreateSchema, "clickhouse-create-schema", c.ClickHouseCreateSchema, "create the ClickHouse database and tables when missing")
	durationFlag(fs, &c.ClickHouseFlushInterval, "clickhouse-flush-interval", "least time between ClickHouse group commits (default 200ms)")
	fs.StringVar(&c.CollectorID, "collector-id", c.CollectorID, "this collector's name in job claims (default: host name and a random suffix)")
	durationFlag(fs, &c.HistoryClaimLease, "history-claim-lease", "how long a claim on a job holds before another collector may analyse it (default 10m)")
	durationFlag(fs, &c.RetentionMaxAge, "retention-max-age", "drop traces received longer ago, e.g. 168h (default: keep)")
	fs.Func("retention-max-bytes", "drop the oldest day of traces while the store is larger, e.g. 500GB (default: no bound)", func(s string) error {
		n, err := parseBytes(s)
		c.RetentionMaxBytes = n
		return err
	})
	durationFlag(fs, &c.RetentionInterval, "retention-interval", "time between retention passes (default 10m)")
	c.Ops.flags(fs)
	return fs
}

// durationFlag binds a Duration flag.
func durationFlag(fs *flag.FlagSet, d *Duration, name, usage string) {
	fs.Func(name, usage, func(s string) error {
		v, err := time.ParseDuration(s)
		*d = Duration(v)
		return err
	})
}

var bytesRE = regexp.MustCompile(`^([0-9]+)\s*(|B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)

// parseBytes reads a size: a number of bytes with an optional unit (KB is
// 1000 bytes, KiB 1024).
func parseBytes(s string) (int64, error) {
	m := bytesRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("size %q is not a number with an optional unit like 500GB", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	mult := map[string]int64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
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
	fs.String("config", *path, "JSON configuration file (keys: the flags' names with _ for -, e.g. store_dir, clickhouse_url, tls_cert)")
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
	case c.Store != StoreDuckDB && c.Store != StoreClickHouse:
		return fmt.Errorf("%w: store %q: want duckdb or clickhouse", ErrInvalidConfig, c.Store)
	case c.Nice < 0 || c.Nice > 19:
		return fmt.Errorf("%w: nice %d: want 0 to 19", ErrInvalidConfig, c.Nice)
	case c.Store == StoreDuckDB && c.StoreDir == "":
		return fmt.Errorf("%w: empty store dir", ErrInvalidConfig)
	case c.Store == StoreClickHouse && !strings.HasPrefix(c.ClickHouseURL, "http://") && !strings.HasPrefix(c.ClickHouseURL, "https://"):
		return fmt.Errorf("%w: clickhouse store needs --clickhouse-url http(s)://host:port, got %q", ErrInvalidConfig, redactURL(c.ClickHouseURL))
	case c.Store == StoreClickHouse && !validIdent(c.ClickHouseDatabase):
		return fmt.Errorf("%w: clickhouse database %q is not a plain name", ErrInvalidConfig, c.ClickHouseDatabase)
	case c.Store == StoreClickHouse && c.ClickHouseCluster != "" && !validIdent(c.ClickHouseCluster):
		return fmt.Errorf("%w: clickhouse cluster %q is not a plain name", ErrInvalidConfig, c.ClickHouseCluster)
	case c.ClickHouseFlushInterval < 0:
		return fmt.Errorf("%w: negative clickhouse flush interval", ErrInvalidConfig)
	case c.HistoryClaimLease <= 0:
		return fmt.Errorf("%w: history claim lease %v must be positive", ErrInvalidConfig, time.Duration(c.HistoryClaimLease))
	case c.RetentionMaxAge < 0 || c.RetentionMaxBytes < 0:
		return fmt.Errorf("%w: negative retention bound", ErrInvalidConfig)
	case (c.RetentionMaxAge > 0 || c.RetentionMaxBytes > 0) && c.RetentionInterval <= 0:
		return fmt.Errorf("%w: retention interval %v must be positive", ErrInvalidConfig, time.Duration(c.RetentionInterval))
	case c.MemoryLimit != "" && !memoryLimitRE.MatchString(c.MemoryLimit):
		return fmt.Errorf("%w: memory limit %q is not a size like 512MB", ErrInvalidConfig, c.MemoryLimit)
	case c.Threads < 0:
		return fmt.Errorf("%w: negative threads %d", ErrInvalidConfig, c.Threads)
	case c.ShutdownGrace <= 0:
		return fmt.Errorf("%w: shutdown grace %v must be positive", ErrInvalidConfig, time.Duration(c.ShutdownGrace))
	case c.QueryTimeout < 0:
		return fmt.Errorf("%w: query timeout %v is negative", ErrInvalidConfig, time.Duration(c.QueryTimeout))
	case c.QueryMaxRows < 0 || c.QueryMaxRows > math.MaxUint32-1:
		return fmt.Errorf("%w: query max rows %d, want 0 (no bound) to %d", ErrInvalidConfig, c.QueryMaxRows, uint32(math.MaxUint32-1))
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

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validIdent reports whether s can name a database or cluster unquoted.
func validIdent(s string) bool { return identRE.MatchString(s) }

// redactURL hides a URL's password for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Level returns LogLevel as a slog level.
func (c Config) Level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("%w: log level %q: want debug, info, warn or error", ErrInvalidConfig, c.LogLevel)
	}
	return l, nil
}
