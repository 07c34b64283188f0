package fetcher

import (
	"errors"
	"fmt"
	"io"
)

// The bounds below keep a hostile or broken history input from crashing the
// process (stack) or swelling it (heap). Each is far above what Hadoop or
// Spark write; the README's Reliability section lists them.

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
