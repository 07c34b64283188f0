package store

import (
	"fmt"
	"strconv"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// dialect is how one backend spells what the questions' SQL needs: the
// few functions and clauses the two write differently, and the relations
// its tables hold differently (DuckDB's runs do not repeat their record's
// fault columns; ClickHouse's do, and every read filters by visibility).
// The questions' SQL is written once over these.
type dialect interface {
	// sel is "SELECT cols" as the backend reads an answer (ClickHouse's
	// rows start with rowMagic); only a query's outermost SELECT uses it.
	sel(cols string) string
	// lit is s as a string literal.
	lit(s string) string
	// visible is the condition, "" or " AND …", that every read of app's
	// records, runs, workloads and process_memory carries; visibleAll the
	// same across every application.
	visible(app string) string
	visibleAll() string
	// key names a stored record, in records and runs.
	key() string
	// batchOrder orders records of one time as their batches were stored.
	batchOrder() string
	// argMax, anyValue: the aggregate functions' names.
	argMax() string
	anyValue() string
	// uniq and uniqIf count distinct tuples of cols (where cond holds).
	uniq(cols string) string
	uniqIf(cols, cond string) string
	// toInt64 casts expr to a signed 64-bit integer.
	toInt64(expr string) string
	// limit is the LIMIT clause of n rows from offset.
	limit(n, offset uint64) string
	// bit is expr & mask, e.g. bit("state", 1).
	bit(expr string, mask int) string
	// leftJoin keeps every row of the left side, joined to at most one
	// row of the right; as names a joined subquery (" AS name" or "").
	leftJoin() string
	as(name string) string

	// traceRuns is the relation of app's runs with their record's
	// coverage columns; where(prefix) adds conditions on columns runs and
	// records share, each named with prefix.
	traceRuns(app string, where func(prefix string) string) string
	// sampleRuns is the relation of app's runs of sampled faults (FAULT
	// records without counters) with their record's node_name, cpu_numa
	// and fault_kind.
	sampleRuns(app string) string
	// heldRecords is the relation of records with their batch's boot_id.
	heldRecords() string
	// hwCounters lists the workloads' six hardware counters (0 when not
	// measured) and their mask (hwCycles …).
	hwCounters() string
	// machines selects, for app, (node_name, boot_id, numa nodes, page
	// size, memory) per machine holding its records (Machine).
	machines(app string) string
	// jobs is the relation of each job's latest result: job_id, sev,
	// fin, usr, que, typ, app, scr, res.
	jobs() string
}

// spelling is how a backend writes the functions and clauses the
// questions' SQL uses: names, and fmt templates of the ones that take
// arguments. Each backend's dialect embeds its spelling.
type spelling struct {
	selPrefix   string // what starts an answer's SELECT list
	recKey      string // key
	order       string // batchOrder
	argMaxFn    string
	anyFn       string
	leftJoinSQL string
	allVisible  string // visibleAll
	uniqT       string // (cols)
	uniqIfT     string // (cols, cond)
	int64T      string // (expr)
	limitT      string // (n, offset)
	bitT        string // (expr, mask)
	asT         string // (name); "" when a subquery takes no name
}

func (s spelling) sel(cols string) string          { return s.selPrefix + cols }
func (s spelling) key() string                     { return s.recKey }
func (s spelling) batchOrder() string              { return s.order }
func (s spelling) argMax() string                  { return s.argMaxFn }
func (s spelling) anyValue() string                { return s.anyFn }
func (s spelling) leftJoin() string                { return s.leftJoinSQL }
func (s spelling) visibleAll() string              { return s.allVisible }
func (s spelling) uniq(cols string) string         { return fmt.Sprintf(s.uniqT, cols) }
func (s spelling) uniqIf(cols, cond string) string { return fmt.Sprintf(s.uniqIfT, cols, cond) }
func (s spelling) toInt64(expr string) string      { return fmt.Sprintf(s.int64T, expr) }
func (s spelling) limit(n, offset uint64) string   { return fmt.Sprintf(s.limitT, n, offset) }
func (s spelling) bit(expr string, mask int) string {
	return fmt.Sprintf(s.bitT, expr, mask)
}

func (s spelling) as(name string) string {
	if s.asT == "" {
		return ""
	}
	return fmt.Sprintf(s.asT, name)
}

// Access kinds as stored, named for the SQL.
const (
	accessAlloc = int8(stratav1.AccessKind_ACCESS_KIND_ALLOC)
	accessRead  = int8(stratav1.AccessKind_ACCESS_KIND_READ)
	accessWrite = int8(stratav1.AccessKind_ACCESS_KIND_WRITE)
	accessFree  = int8(stratav1.AccessKind_ACCESS_KIND_FREE)
	accessMove  = int8(stratav1.AccessKind_ACCESS_KIND_MOVE)
	accessFault = int8(stratav1.AccessKind_ACCESS_KIND_FAULT)
	accessFill  = int8(stratav1.AccessKind_ACCESS_KIND_FILL)
)

// lifecycleKinds are the access kinds of a block's life (not FAULT).
var lifecycleKinds = fmt.Sprintf("(%d, %d, %d, %d, %d)", accessAlloc, accessRead, accessWrite, accessFree, accessMove)

// itoa is strconv.Itoa for the small integers SQL names.
func itoa[T ~int8 | ~int32 | ~int](v T) string { return strconv.Itoa(int(v)) }

// The page states the questions test.
const (
	pgPresent   = stratav1.PageState_PAGE_STATE_PRESENT
	pgHidden    = stratav1.PageState_PAGE_STATE_PFN_HIDDEN
	pgSwapped   = stratav1.PageState_PAGE_STATE_SWAPPED
	pgTHP       = stratav1.PageState_PAGE_STATE_THP
	pgUnmapped  = stratav1.PageState_PAGE_STATE_UNMAPPED
	pgCrossNode = stratav1.PageState_PAGE_STATE_CROSS_NODE
)

// stateBit is the state column's bit of a page state, named by the
// stratav1.PageState enum.
func stateBit(d dialect, s stratav1.PageState) string {
	return d.bit("state", int(s))
}

// nodeExpr is a run's NUMA node as the questions count it: -1 when not
// present or its PFN hidden.
func nodeExpr(d dialect) string {
	return "CASE WHEN " + stateBit(d, pgPresent) + " = 0 OR " + stateBit(d, pgHidden) + " != 0 THEN -1 ELSE numa_node END"
}

// lifecycleScope selects app's lifecycle records, of every kind of block.
func lifecycleScope(d dialect, app string) string {
	return "app_id = " + d.lit(app) + " AND access_kind IN " + lifecycleKinds + d.visible(app)
}

// cachedCond is true of a record or run of a cached RDD block: rdd_id >= 0
// and not execution memory (a Tungsten page carries its task's RDD).
var cachedCond = "rdd_id >= 0 AND mem_mode != " + itoa(int8(stratav1.MemoryMode_MEMORY_MODE_EXECUTION))

// cachedScope selects app's lifecycle records of cached RDD blocks.
func cachedScope(d dialect, app string) string {
	return lifecycleScope(d, app) + " AND " + cachedCond
}

// holdsSQL is the one definition of the records that say what a block
// buffer holds: scope selects the records the question is about. A record
// holds when it is not a free, its pages were resolved (pages > 0), and
// either it is resolved BUFFERS, WALKED or WALK_CUT, or no record of its
// registration (the buffer's executor_id, pid, block_id, chunk and
// hook_block_id) in scope is. So a deserialized block once walked is its
// walks' objects, never again its array of references — a STALE mark or a
// pending walk does not replace the latest walk — and a block never walked
// is its array. "A buffer's latest record with pages", wherever a question
// takes one (RDDs, Cached, Numa, the physical map, what blocks held over
// time), is its latest record that holds.
func holdsSQL(scope string) string {
	held := fmt.Sprintf("access_kind != %d AND pages > 0", accessFree)
	return "(" + held + " AND (" + resolvedSQL + " OR (executor_id, pid, block_id, chunk, hook_block_id) NOT IN (" +
		"SELECT executor_id, pid, block_id, chunk, hook_block_id FROM records WHERE " + scope + " AND " + held +
		" AND " + resolvedSQL + ")))"
}

// lastRecsWhere selects, among the records of scope, each buffer as last
// resolved while it was live: for each buffer of a block (executor_id,
// pid, block_id, chunk) its latest registration (the hook id of its latest
// record), and of that registration the latest records that hold
// (holdsSQL) — all those of one time, since an agent sends a record too
// large for one batch as several over consecutive sub-ranges.
func lastRecsWhere(d dialect, scope string) string {
	held := scope + ` AND ` + holdsSQL(scope)
	return held + ` AND (executor_id, pid, block_id, chunk, hook_block_id, time_ns) IN (
	SELECT executor_id, pid, block_id, chunk, hook_block_id, max(time_ns) FROM records
	WHERE ` + held + ` AND (executor_id, pid, block_id, chunk, hook_block_id) IN (
		SELECT executor_id, pid, block_id, chunk, ` + d.argMax() + `(hook_block_id, time_ns) FROM records
		WHERE ` + scope + ` GROUP BY executor_id, pid, block_id, chunk)
	GROUP BY executor_id, pid, block_id, chunk, hook_block_id)`
}

// liveRecsWhere selects lastRecsWhere's records of the buffers still
// live: those whose latest records do not include a free. A freed buffer
// holds nothing.
func liveRecsWhere(d dialect, scope string) string {
	return lastRecsWhere(d, scope) + ` AND (executor_id, pid, block_id, chunk) NOT IN (
	SELECT executor_id, pid, block_id, chunk FROM records
	WHERE ` + scope + ` AND access_kind = ` + itoa(accessFree) + ` AND (executor_id, pid, block_id, chunk, time_ns) IN (
		SELECT executor_id, pid, block_id, chunk, max(time_ns) FROM records
		WHERE ` + scope + ` GROUP BY executor_id, pid, block_id, chunk))`
}

// runsOf selects cols of app's runs (where adds conditions on them) of the
// records recsWhere selects.
func runsOf(d dialect, app, cols, where, recsWhere string) string {
	return `SELECT ` + cols + ` FROM runs WHERE app_id = ` + d.lit(app) + d.visible(app) + where +
		` AND (` + d.key() + `) IN (SELECT ` + d.key() + ` FROM records WHERE ` + recsWhere + `)`
}

// validRun is true of a stored run that can be expanded: 1..MaxRunPages
// pages of a known size (ValidateBatch refuses the others; only a row a
// collector that validated less stored can hold one).
var validRun = " AND pages BETWEEN 1 AND " + strconv.Itoa(stratav1.MaxRunPages) + " AND page_size > 0"
