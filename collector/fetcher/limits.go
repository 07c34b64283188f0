package fetcher

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"unsafe"

	"github.com/stratatrace/strata/collector/job"
)

// The bounds below keep a hostile or broken history input from crashing the
// process (stack) or swelling it (heap). Each is far above what Hadoop or
// Spark write; docs/reliability.md lists them.

// maxNesting bounds the nesting of arrays and objects in one JSON value
// (an event line, a rumen task, a REST response). Real inputs nest fewer
// than 12 levels. Decoders that recurse stop at this depth, so a line of
// millions of brackets is a clear error instead of a stack overflow.
const maxNesting = 128

// maxValueBytes bounds one JSON value read as a whole from a stream that is
// not line-based: a rumen task or job field, a REST response. It matches
// maxLineBytes, the bound of one line of a job history or event log.
const maxValueBytes = maxLineBytes

// maxConfBytes bounds a job's _conf.xml (real ones are 100–300 KiB).
const maxConfBytes = 16 << 20

// errNesting is what a too-deep value returns; it wraps ErrTooDeep.
var errNesting = fmt.Errorf("%w: more than %d levels of arrays and objects", ErrTooDeep, maxNesting)

// checkNesting returns errNesting when the JSON text b nests arrays and
// objects deeper than maxNesting. It does not validate b otherwise: brackets
// inside strings are ignored, anything else is left to the decoder. It uses
// no recursion, so any input is safe.
func checkNesting(b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > maxNesting {
				return errNesting
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// nestingReader passes a stream of JSON text through while tracking its
// nesting with checkNesting's rules; past maxNesting it returns the bytes
// before the offending bracket and then errNesting on every later read. A
// decoder reading through it (json.Decoder, whose own limit is 10 000
// levels) thus fails with the fetcher's error at the fetcher's depth.
type nestingReader struct {
	r        io.Reader
	depth    int
	inString bool
	escaped  bool
	err      error
}

func (n *nestingReader) Read(p []byte) (int, error) {
	if n.err != nil {
		return 0, n.err
	}
	k, err := n.r.Read(p)
	for i, c := range p[:k] {
		switch {
		case n.inString:
			switch {
			case n.escaped:
				n.escaped = false
			case c == '\\':
				n.escaped = true
			case c == '"':
				n.inString = false
			}
		case c == '"':
			n.inString = true
		case c == '[' || c == '{':
			if n.depth++; n.depth > maxNesting {
				n.err = errNesting
				return i, nil
			}
		case c == ']' || c == '}':
			n.depth--
		}
	}
	return k, err
}

// errTooBig is the sentinel a capReader returns past its limit.
var errTooBig = errors.New("value too large")

// capReader fails reads that would take its total past limit, so a decoder
// that buffers a whole value (encoding/json's) cannot buffer more than the
// caller allows. The caller moves limit forward as values are consumed.
type capReader struct {
	r     io.Reader
	read  int64 // bytes returned so far
	limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	left := c.limit - c.read
	if left <= 0 {
		return 0, errTooBig
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// DefaultMaxJobBytes is the memory one job's model may take, as the budget
// below estimates it, unless Options.MaxJobBytes says otherwise. A
// 100 000-task MapReduce job takes about 130 MiB; a Spark application's
// stage and executor totals are small whatever its task count, and its
// per-task details stop at maxSparkTaskBytes.
const DefaultMaxJobBytes = 1 << 30

// maxSparkTaskBytes bounds the per-task details (job.SparkStage.Tasks) an
// event-log replay keeps; tasks past it count in the stage and executor
// totals only. No heuristic reads the details; about 400 000 typical tasks
// fit.
const maxSparkTaskBytes = 128 << 20

// Estimated sizes of the parts of a job's model: the struct plus the
// container slot that holds it.
const (
	costTask    = int64(unsafe.Sizeof(job.Task{})) + 96 // + index map entries
	costAttempt = int64(unsafe.Sizeof(job.Attempt{})) + 32
	costSplits  = int64(unsafe.Sizeof(job.ProgressSplits{})) + 4*job.SplitBuckets*8
	// costCounter is one entry of a counters map (names are shared).
	costCounter = 40
	// costSparkTask is one job.SparkTask; costSparkObject a stage, job,
	// executor or block entry of a replay.
	costSparkTask   = int64(unsafe.Sizeof(job.SparkTask{}))
	costSparkObject = 512
)

// budget adds up the estimated memory of a job's model as a fetcher builds
// it and fails once it passes its limit, so an input can make the fetcher
// refuse a job but never make it exhaust memory. Charges are estimates
// (the bound is stated in MiB, not exact bytes); replaced parts are not
// refunded.
type budget struct {
	used, limit int64
	err         error
}

func newBudget(limit int64) *budget {
	if limit <= 0 {
		limit = DefaultMaxJobBytes
	}
	return &budget{limit: limit}
}

// charge adds n bytes and reports whether the model is still within the
// limit; once it is not, err says so.
func (b *budget) charge(n int64) bool {
	b.used += n
	if b.used > b.limit && b.err == nil {
		b.err = fmt.Errorf("%w: the job's model passed the %s bound on the memory one job may take", ErrTooLarge, sizeText(b.limit))
	}
	return b.err == nil
}

// counters charges a counters map.
func (b *budget) counters(c job.Counters) bool { return b.charge(int64(len(c)) * costCounter) }

// task charges a whole task: its attempts, counters, splits and strings.
func (b *budget) task(t *job.Task) bool {
	n := costTask + int64(len(t.ID)+len(t.Analyzed)) + int64(len(t.Counters))*costCounter
	for i := range t.Attempts {
		a := &t.Attempts[i]
		n += costAttempt + int64(len(a.ID)+len(a.Host)+len(a.Diagnostics))
		if a.Splits != nil {
			n += costSplits
		}
		if len(a.Counters) > 0 && !sameMap(a.Counters, t.Counters) {
			n += int64(len(a.Counters)) * costCounter
		}
	}
	return b.charge(n)
}

// sameMap reports whether a and b are the same map (not equal contents).
func sameMap(a, b job.Counters) bool {
	return len(a) > 0 && len(b) > 0 && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// sizeText writes n bytes in MiB, or KiB below one MiB.
func sizeText(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
