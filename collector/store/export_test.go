package store

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store/ddl"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// WriteSteps are the steps of an Append at which SetWriteHook's hook runs,
// in order.
var WriteSteps = []string{"lookup", "begin", "rows", "key", "node", "commit", "committed"}

// SetWriteHook makes the writer call hook before each step of every later
// write; nil removes it.
func SetWriteHook(s *DuckDB, hook func(step string) error) {
	if err := s.submit(context.Background(), func(w *writer) error {
		w.hook = hook
		return nil
	}); err != nil {
		panic(err)
	}
}

// AppendUnchecked stores b as Append does, but without ValidateBatch: the
// store a collector that validated less may have left behind.
func AppendUnchecked(st Store, b *stratav1.Batch) error {
	switch s := st.(type) {
	case *ClickHouse:
		return s.appendUnchecked(b)
	case *DuckDB:
		return s.submit(context.Background(), func(w *writer) error {
			_, err := w.append(b)
			return err
		})
	}
	panic(fmt.Sprintf("store: AppendUnchecked of %T", st))
}

// appendUnchecked is Append without ValidateBatch.
func (s *ClickHouse) appendUnchecked(b *stratav1.Batch) error {
	_, err := s.appendEntry(context.Background(), encodeBatch(b, randomUint64(), uint32(s.now().Unix())))
	return err
}

// ExpandStored expands run as Trace does once it is stored: its PFN steps
// encoded as the runs table keeps them, then expandRun.
func ExpandStored(run *stratav1.PageRun, pageSize uint32, fn func(stratav1.Page) bool) error {
	stored := proto.Clone(run).(*stratav1.PageRun)
	stored.PfnDeltas = nil
	return expandRun(stored, encodeDeltas(run.GetPfnDeltas()), pageSize, fn)
}

// SetCommitHook makes the ClickHouse committer call hook before each step
// of every later group commit (CommitSteps); nil removes it.
func SetCommitHook(s *ClickHouse, hook func(step string) error) {
	s.commit.hookMu.Lock()
	defer s.commit.hookMu.Unlock()
	s.commit.hook = hook
}

// OpenClickHouseOneShard opens the store with the cluster layout
// (Distributed tables over <name>_local tables) on a cluster of one
// shard that is the server itself, without ON CLUSTER DDL or Replicated
// engines, which need ZooKeeper: the cluster's read and write paths, on
// one server.
func OpenClickHouseOneShard(ctx context.Context, opts ClickHouseOptions) (*ClickHouse, error) {
	opts.layout = &ddl.Layout{Cluster: opts.Cluster}
	return OpenClickHouse(ctx, opts)
}

// DecodeRows reads data as the answer of a query selecting
// (rowMagic, String, UInt64, Int32, UInt8, String): the fuzz target of the
// RowBinary reader. It returns the rows read and the reader's error.
func DecodeRows(data []byte) (int, error) {
	r := newRowReader(bytes.NewReader(data))
	n := 0
	for r.next() {
		_, _, _, _, _ = r.str(), r.u64(), r.i32(), r.u8(), r.blob()
		if r.Err() == nil {
			n++
		}
	}
	return n, r.Err()
}

// EncodeRuns returns the runs rows of b as the store inserts them
// (RowBinary), and the same rows as JSONEachRow, for the format benchmark.
func EncodeRuns(b *stratav1.Batch) (rowBinary, jsonEachRow []byte) {
	e := encodeBatch(b, 1, 1_700_000_000)
	cols := ddl.TableByName("runs").Columns
	r := newRowReader(bytes.NewReader(e.rows[1]))
	var js []byte
	for {
		if _, err := r.r.Peek(1); err != nil {
			break
		}
		js = append(js, '{')
		for i, c := range cols {
			name, typ, _ := strings.Cut(c, " ")
			if i > 0 {
				js = append(js, ',')
			}
			js = strconv.AppendQuote(append(js, ""...), name)
			js = append(js, ':')
			switch typ {
			case "String":
				js = strconv.AppendQuote(js, r.str())
			case "DateTime", "UInt32":
				js = strconv.AppendUint(js, uint64(r.u32()), 10)
			case "UInt64":
				js = strconv.AppendUint(js, r.u64(), 10)
			case "Int64":
				js = strconv.AppendInt(js, r.i64(), 10)
			case "Int32":
				js = strconv.AppendInt(js, int64(r.i32()), 10)
			case "Int8":
				js = strconv.AppendInt(js, int64(r.i8()), 10)
			case "UInt8":
				js = strconv.AppendUint(js, uint64(r.u8()), 10)
			default:
				panic("EncodeRuns: type " + typ)
			}
		}
		js = append(js, "}\n"...)
	}
	if r.Err() != nil {
		panic(r.Err())
	}
	return e.rows[1], js
}

// InsertRuns sends body, rows of the runs table in format, as one insert.
func InsertRuns(ctx context.Context, s *ClickHouse, format string, body []byte) error {
	stmt := "INSERT INTO runs (" + ddl.TableByName("runs").InsertCols() + ") FORMAT " + format
	resp, err := s.c.do(ctx, url.Values{"database": {s.c.database}, "query": {stmt}}, bytes.NewReader(body))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// DropPhysMaps forgets the cached PFN indexes, so the next PhysMap builds
// its index again.
func DropPhysMaps(s *DuckDB) {
	s.physMaps.mu.Lock()
	s.physMaps.entries = nil
	s.physMaps.mu.Unlock()
}

// CoverageColumns names the columns records and runs gained for coverage.
func CoverageColumns() []string {
	var out []string
	for _, c := range ddl.Coverage {
		out = append(out, c.Name)
	}
	return out
}
