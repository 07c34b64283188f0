package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// RowBinary is ClickHouse's row format that every server version since
// before 18.16 reads and writes the same way: each row is its columns in
// order, integers little-endian at their width, strings as an unsigned
// LEB128 length and the bytes, DateTime as UInt32 seconds. The ClickHouse
// store inserts with it and reads every query's answer with it.

// rowWriter appends RowBinary values to a buffer.
type rowWriter struct{ b []byte }

func (w *rowWriter) u8(v uint8)    { w.b = append(w.b, v) }
func (w *rowWriter) i8(v int8)     { w.b = append(w.b, byte(v)) }
func (w *rowWriter) u32(v uint32)  { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *rowWriter) i32(v int32)   { w.u32(uint32(v)) }
func (w *rowWriter) u64(v uint64)  { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *rowWriter) i64(v int64)   { w.u64(uint64(v)) }
func (w *rowWriter) f64(v float64) { w.u64(math.Float64bits(v)) }

func (w *rowWriter) boolean(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

func (w *rowWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *rowWriter) bytes(s []byte) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

// rowMagic starts every row the store's queries select (SELECT
// toUInt8(165), …). ClickHouse reports an error that strikes after the
// answer began as text appended to the body, at a row boundary, behind a
// 200 status; the text starts with "Code:", never with this byte, so the
// reader tells a row from an error at every row.
const rowMagic = 0xA5

// rowSelect is the select list's first column, rowMagic.
const rowSelect = "toUInt8(165)"

// maxStringBytes bounds one string a query returns (a job result is the
// largest); a longer length is a corrupt answer.
const maxStringBytes = 256 << 20

// errServerText is wrapped around an error the server appended mid-answer.
var errServerText = errors.New("clickhouse error after the answer began")

// rowReader reads RowBinary rows that start with rowMagic. Its first error
// sticks; every read after it returns zero values.
type rowReader struct {
	r   *bufio.Reader
	err error
	buf []byte
}

func newRowReader(r io.Reader) *rowReader {
	return &rowReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next starts a row: false at the clean end of the answer or at an error
// (see Err).
func (r *rowReader) next() bool {
	if r.err != nil {
		return false
	}
	b, err := r.r.ReadByte()
	if err == io.EOF {
		return false
	}
	if err != nil {
		r.err = fmt.Errorf("read answer: %w", err)
		return false
	}
	if b != rowMagic {
		rest, _ := io.ReadAll(io.LimitReader(r.r, 4<<10))
		r.err = fmt.Errorf("%w: %s", errServerText, trimText(append([]byte{b}, rest...)))
		return false
	}
	return true
}

// Err is the first error met, nil after a clean end.
func (r *rowReader) Err() error { return r.err }

func (r *rowReader) fixed(n int) []byte {
	if r.err != nil {
		return nil
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = fmt.Errorf("read answer: truncated row: %w", err)
		return nil
	}
	return b
}

func (r *rowReader) u8() uint8 {
	if b := r.fixed(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *rowReader) i8() int8 { return int8(r.u8()) }

func (r *rowReader) u32() uint32 {
	if b := r.fixed(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *rowReader) i32() int32 { return int32(r.u32()) }

func (r *rowReader) u64() uint64 {
	if b := r.fixed(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *rowReader) i64() int64 { return int64(r.u64()) }

func (r *rowReader) f64() float64 { return math.Float64frombits(r.u64()) }

func (r *rowReader) boolean() bool { return r.u8() != 0 }

func (r *rowReader) blob() []byte {
	if r.err != nil {
		return nil
	}
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		r.err = fmt.Errorf("read answer: string length: %w", err)
		return nil
	}
	if n > maxStringBytes {
		r.err = fmt.Errorf("read answer: string of %d bytes", n)
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = fmt.Errorf("read answer: truncated string: %w", err)
		return nil
	}
	return b
}

func (r *rowReader) str() string { return string(r.blob()) }

// trimText returns a server's error text without its trailing newline,
// capped so that a log line stays a line.
func trimText(b []byte) string {
	const max = 2000
	if len(b) > max {
		b = append(b[:max:max], "…"...)
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}
