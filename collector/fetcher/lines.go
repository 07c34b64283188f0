package fetcher

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// maxLineBytes bounds one line of a job history or event log. Real lines
// (a task's counters, a stage's accumulables) are far smaller; the bound
// keeps garbage input from growing a buffer without limit.
const maxLineBytes = 64 << 20

// errLineTooLong is returned by lineReader.next for a line over maxLineBytes
// (or recorded as a skipped line, see lineReader.skipLong).
var errLineTooLong = fmt.Errorf("%w: line longer than %d MiB", ErrTooLarge, maxLineBytes>>20)

// lineReader yields the lines of a stream one at a time without reading the
// whole stream. The slice next returns is valid until the following call.
type lineReader struct {
	br   *bufio.Reader
	buf  []byte
	n    int  // lines returned so far
	last bool // the line just returned ended at EOF without a newline
	// skipLong makes next skip a line over maxLineBytes, recording it in
	// bad, instead of failing the rest of the stream.
	skipLong bool

	bad badLines
}

// badLines counts malformed lines skipped and remembers the first.
type badLines struct {
	n         int
	first     string
	firstLine int
}

func (b *badLines) note(line int, why error) {
	b.merge(badLines{n: 1, first: fmt.Sprintf("line %d: %v", line, why), firstLine: line})
}

// merge adds the lines o counted; the first is the one with the lower
// line number.
func (b *badLines) merge(o badLines) {
	if o.n == 0 {
		return
	}
	if b.n == 0 || o.firstLine < b.firstLine {
		b.first, b.firstLine = o.first, o.firstLine
	}
	b.n += o.n
}

// String describes the skipped lines, "" when none were.
func (b *badLines) String() string {
	if b.n == 0 {
		return ""
	}
	return fmt.Sprintf("skipped %d malformed line(s), first at %s", b.n, b.first)
}

// reject records that the line just returned is malformed. It reports true
// when that line is the unterminated last one — the input was cut there and
// the caller should stop with a "truncated" warning — and false when the
// line was skipped in the middle of the input.
func (l *lineReader) reject(why error) (truncated bool) {
	if l.last {
		return true
	}
	l.bad.note(l.n, why)
	return false
}

// skipped describes the malformed lines skipped, "" when none were.
func (l *lineReader) skipped() string { return l.bad.String() }

func newLineReader(r io.Reader) *lineReader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 256<<10 {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	return &lineReader{br: br}
}

// next returns the next line without its line terminator. At the end of the
// stream it returns io.EOF; a read error of the underlying stream (e.g. a
// truncated compressed stream) is returned as is, after any complete lines.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(frag) > maxLineBytes {
			if !l.skipLong {
				return nil, fmt.Errorf("read line %d: %w", l.n+1, errLineTooLong)
			}
			l.n++
			l.bad.note(l.n, errLineTooLong)
			l.buf = l.buf[:0]
			if err == nil {
				continue // frag ended the line
			}
			if err = l.discardLine(); err != nil {
				return nil, err
			}
			continue
		}
		if err == nil {
			var line []byte
			if len(l.buf) == 0 {
				line = frag
			} else {
				l.buf = append(l.buf, frag...)
				line = l.buf
			}
			l.n++
			l.last = false
			return trimEOL(line), nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			l.buf = append(l.buf, frag...)
			continue
		}
		l.buf = append(l.buf, frag...)
		if len(l.buf) > 0 {
			if errors.Is(err, io.EOF) {
				l.n++
				l.last = true
				return trimEOL(l.buf), nil
			}
			// A partial line before a stream error: return the error; the
			// fragment cannot be trusted.
		}
		return nil, err
	}
}

// discardLine reads up to and including the next newline.
func (l *lineReader) discardLine() error {
	for {
		_, err := l.br.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// isBlank reports whether b holds only whitespace.
func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}
