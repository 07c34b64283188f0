package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stratatrace/strata/collector/store/ddl"
)

// ClickHouseOptions configure the server store.
type ClickHouseOptions struct {
	// URL is the server's HTTP interface, e.g. http://clickhouse:8123; it
	// may carry user:password.
	URL string
	// Database holds the tables; created with them unless the schema is
	// managed outside (CreateSchema false). Default "strata".
	Database string
	// User and Password, when set, override the URL's.
	User, Password string
	// Cluster, when set, names the ClickHouse cluster of the sharded and
	// replicated layout (see ClusterSchema): the store then inserts with
	// insert_distributed_sync=1, reads with distributed_product_mode=local,
	// and applies retention to every shard's local tables ON CLUSTER.
	Cluster string
	// CreateSchema creates the database and the single-server tables at
	// Open when they are missing. A cluster's schema is created by its
	// operator from ClusterSchema; Open then only checks the tables exist.
	CreateSchema bool
	// FlushInterval is the least time between two group commits: batches
	// that arrive meanwhile are written together, so the server sees a few
	// large inserts per second however many agents send. Default 200 ms.
	FlushInterval time.Duration
	// MaxPendingBytes bounds the encoded batches waiting for or in a
	// group commit; Append blocks while it is reached. Default 64 MiB.
	MaxPendingBytes int64
	// Owner names this collector in job claims; default a random id.
	Owner string
	// ClaimSettle is how old (by the server's clock) the earliest claim of
	// a job must be before it is decided; ClaimLease how long a claim
	// holds before another collector may take the job. Defaults 2 s, 10 min.
	ClaimSettle, ClaimLease time.Duration
	// HTTPClient talks to the server (TLS settings, say); default one with
	// keep-alive connections.
	HTTPClient *http.Client
	// Logger receives open/close events and query warnings; nil discards.
	Logger *slog.Logger
	// OnWrite, as in Options: told the outcome of every batch and job
	// write, on the committer goroutine; must not block.
	OnWrite func(err error)
	// Now is the collector's clock (received times, retention); default
	// time.Now. Tests move it.
	Now func() time.Time

	// layout, set only by tests, replaces the cluster layout; forms, set
	// only by tests, replaces the forms the server's version gives.
	layout *ddl.Layout
	forms  *ddl.Features
}

// ClickHouse is the server Store: a ClickHouse database reached over its
// HTTP interface (see the package doc).
type ClickHouse struct {
	querier // the questions, over chDialect
	chDialect

	c       *chClient
	log     *slog.Logger
	onWrite func(error)
	now     func() time.Time
	opts    ClickHouseOptions
	// version is the server's version string, e.g. "18.16.1".
	version string
	// forms are the column forms of the tables the store creates or
	// adds columns to: what the server's version has (ddl.FeaturesOf).
	forms ddl.Features

	commit     *committer
	jobVersion jobVersion

	closeOnce sync.Once
	closing   chan struct{}
	closeErr  error
}

var _ Store = (*ClickHouse)(nil)

// OpenClickHouse connects to the server, creates the schema when asked, in
// the column forms of the server's version (ddl.FeaturesOf; tables that
// exist keep theirs), and starts the group committer. Close stops it
// after a last commit.
func OpenClickHouse(ctx context.Context, opts ClickHouseOptions) (*ClickHouse, error) {
	c, err := newCHClient(opts)
	if err != nil {
		return nil, err
	}
	if opts.Database == "" {
		opts.Database = "strata"
	}
	// The database and cluster go into SQL unquoted.
	if !identRE.MatchString(opts.Database) || (opts.Cluster != "" && !identRE.MatchString(opts.Cluster)) {
		return nil, fmt.Errorf("open clickhouse: database %q and cluster %q must be plain names", opts.Database, opts.Cluster)
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 200 * time.Millisecond
	}
	if opts.MaxPendingBytes <= 0 {
		opts.MaxPendingBytes = 64 << 20
	}
	if opts.ClaimSettle <= 0 {
		opts.ClaimSettle = 2 * time.Second
	}
	if opts.ClaimLease <= 0 {
		opts.ClaimLease = 10 * time.Minute
	}
	if opts.Owner == "" {
		opts.Owner = "collector-" + randomHex(6)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	onWrite := opts.OnWrite
	if onWrite == nil {
		onWrite = func(error) {}
	}
	s := &ClickHouse{chDialect: chDialect{chSpelling}, c: c, log: log.With("component", "store", "backend", "clickhouse"), onWrite: onWrite,
		now: opts.Now, opts: opts, closing: make(chan struct{})}
	s.querier = querier{src: s, log: s.log}
	v, err := s.serverVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", c.redacted(), err)
	}
	s.version = v
	forms, known := ddl.FeaturesOf(v)
	if !known {
		s.log.Warn("server version not understood: tables get 18.16's column forms", "server_version", v)
	}
	if opts.forms != nil {
		forms = *opts.forms
	}
	s.forms = forms
	if err := s.prepareSchema(ctx); err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", c.redacted(), err)
	}
	s.commit = newCommitter(s)
	s.log.Info("store open", "url", c.redacted(), "database", opts.Database, "server_version", v,
		"column_forms", forms.String(), "cluster", opts.Cluster, "owner", opts.Owner)
	return s, nil
}

// ServerVersion is what the server answered to SELECT version().
func (s *ClickHouse) ServerVersion() string { return s.version }

func (s *ClickHouse) serverVersion(ctx context.Context) (string, error) {
	var v string
	noDB := *s.c
	noDB.database = "" // the database may not exist yet
	err := noDB.query(ctx, "SELECT "+rowSelect+", version()", func(r *rowReader) { v = r.str() })
	if err != nil {
		return "", fmt.Errorf("ask server version: %w", err)
	}
	return v, nil
}

// Close makes every later call return ErrClosed, commits what is pending
// and stops the committer. Later calls return the first call's result.
func (s *ClickHouse) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.closeErr = s.commit.stop()
		s.c.http.CloseIdleConnections()
		s.log.Info("store closed", "error", s.closeErr)
	})
	return s.closeErr
}

func (s *ClickHouse) closed() bool { return isClosed(s.closing) }

// chClient is the HTTP interface of one server: statements go in the POST
// body, inserts name their table in the query parameter and stream
// RowBinary rows in the body, answers come back as RowBinary.
type chClient struct {
	endpoint string // scheme://host:port/ without credentials
	user     string
	password string
	database string
	settings url.Values // sent with every request
	http     *http.Client
}

func newCHClient(opts ClickHouseOptions) (*chClient, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("open clickhouse: URL %q is not http(s)://host:port", redactURL(opts.URL))
	}
	c := &chClient{database: opts.Database, settings: url.Values{}, http: opts.HTTPClient}
	if c.database == "" {
		c.database = "strata"
	}
	if u.User != nil {
		c.user = u.User.Username()
		c.password, _ = u.User.Password()
	}
	if opts.User != "" {
		c.user = opts.User
	}
	if opts.Password != "" {
		c.password = opts.Password
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	c.endpoint = u.String()
	if c.http == nil {
		c.http = &http.Client{Transport: &http.Transport{
			// Each Append of a group commit and each query holds a
			// connection; keep enough idle ones that a busy collector does
			// not reconnect per request.
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	if opts.Cluster != "" {
		// An acknowledged insert is on its shard, not queued on the
		// Distributed table's node.
		c.settings.Set("insert_distributed_sync", "1")
		// The visibility subqueries read the local tables of each shard:
		// a batch's rows and its commit rows share a shard (sharding key
		// node_name).
		c.settings.Set("distributed_product_mode", "local")
	}
	return c, nil
}

func (c *chClient) redacted() string { return c.endpoint }

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// chError is an error the server answered, with its exception code.
type chError struct {
	Code   int
	Status int
	Text   string
}

func (e *chError) Error() string {
	return fmt.Sprintf("clickhouse: HTTP %d: %s", e.Status, e.Text)
}

// Exception codes the store handles.
const (
	chDuplicateColumn = 15 // two collectors added the same column at once
	chTableExists     = 57
	chDatabaseExists  = 82
)

var (
	codeRE  = regexp.MustCompile(`Code: (\d+)`)
	identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (c *chClient) do(ctx context.Context, params url.Values, body io.Reader) (*http.Response, error) {
	q := url.Values{}
	for k, v := range c.settings {
		q[k] = v
	}
	for k, v := range params {
		q[k] = v
	}
	if q.Get("database") == "" {
		q.Del("database")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"?"+q.Encode(), body)
	if err != nil {
		return nil, err
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.password)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
		e := &chError{Status: resp.StatusCode, Text: trimText(text)}
		if m := codeRE.FindSubmatch(text); m != nil {
			e.Code, _ = strconv.Atoi(string(m[1]))
		}
		return nil, e
	}
	return resp, nil
}

// exec runs a statement that returns nothing.
func (c *chClient) exec(ctx context.Context, stmt string) error {
	resp, err := c.do(ctx, url.Values{"database": {c.database}}, strings.NewReader(stmt))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// insert streams body, RowBinary rows of cols, into table.
func (c *chClient) insert(ctx context.Context, table, cols string, body io.Reader) error {
	stmt := "INSERT INTO " + table + " (" + cols + ") FORMAT RowBinary"
	resp, err := c.do(ctx, url.Values{"database": {c.database}, "query": {stmt}}, body)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", table, err)
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// query runs a SELECT whose first column is rowSelect and calls row for
// each row, which reads the other columns in order. A row's error, or one
// the server appended, ends it.
func (c *chClient) query(ctx context.Context, sel string, row func(*rowReader)) error {
	return c.queryStop(ctx, sel, func(r *rowReader) bool { row(r); return true })
}

// queryStop is query with a row function that can stop early (false);
// the rest of the answer is not read, and the request is cancelled.
func (c *chClient) queryStop(ctx context.Context, sel string, row func(*rowReader) bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.do(ctx, url.Values{"database": {c.database}}, strings.NewReader(sel+"\nFORMAT RowBinary"))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := newRowReader(resp.Body)
	for r.next() {
		if !row(r) {
			return r.Err()
		}
		if r.Err() != nil {
			break
		}
	}
	return r.Err()
}

// quote returns s as a ClickHouse string literal.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// randomUint64 returns a random non-zero number: a write attempt's uid.
func randomUint64() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// isCode reports whether err is a server exception with one of codes.
func isCode(err error, codes ...int) bool {
	var e *chError
	if !errors.As(err, &e) {
		return false
	}
	for _, c := range codes {
		if e.Code == c {
			return true
		}
	}
	return false
}

// joinBytes is a reader over several buffers without copying them.
func joinBytes(parts [][]byte) io.Reader {
	rs := make([]io.Reader, 0, len(parts))
	for _, p := range parts {
		if len(p) > 0 {
			rs = append(rs, bytes.NewReader(p))
		}
	}
	return io.MultiReader(rs...)
}
