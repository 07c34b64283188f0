package gen

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"

	"github.com/stratatrace/strata/collector/fetcher/xxh32"
)

// LZ4BlockWriter writes lz4-java's LZ4BlockOutputStream format: blocks of
// up to 64 KiB, each behind a 21-byte header ("LZ4Block", a token with the
// method and block-size level, compressed and original lengths, and the
// block's xxHash32 with seed 0x9747B28C masked to 28 bits, all
// little-endian), then an empty raw block as the end mark on Close.
type LZ4BlockWriter struct {
	w      io.Writer
	buf    []byte
	out    []byte
	closed bool
}

const (
	lz4BlockSize = 64 << 10
	lz4Level     = 6 // 1 << (10 + 6) = 64 KiB
)

// NewLZ4BlockWriter returns a writer of lz4-java's block stream.
func NewLZ4BlockWriter(w io.Writer) *LZ4BlockWriter {
	return &LZ4BlockWriter{w: w, buf: make([]byte, 0, lz4BlockSize)}
}

// Write buffers p and writes whole blocks.
func (z *LZ4BlockWriter) Write(p []byte) (int, error) {
	if z.closed {
		return 0, errors.New("write lz4 block stream: closed")
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), lz4BlockSize-len(z.buf))
		z.buf = append(z.buf, p[:k]...)
		p = p[k:]
		if len(z.buf) == lz4BlockSize {
			if err := z.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (z *LZ4BlockWriter) flush() error {
	if len(z.buf) == 0 {
		return nil
	}
	if cap(z.out) < lz4.CompressBlockBound(len(z.buf)) {
		z.out = make([]byte, lz4.CompressBlockBound(len(z.buf)))
	}
	out := z.out[:cap(z.out)]
	n, err := lz4.CompressBlock(z.buf, out, nil)
	method, payload := byte(0x20), out[:n]
	if err != nil || n == 0 || n >= len(z.buf) {
		method, payload = 0x10, z.buf
	}
	var h [21]byte
	copy(h[:], "LZ4Block")
	h[8] = method | lz4Level
	binary.LittleEndian.PutUint32(h[9:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[13:], uint32(len(z.buf)))
	binary.LittleEndian.PutUint32(h[17:], xxh32.Sum(z.buf, 0x9747b28c)&0x0fffffff)
	if _, err := z.w.Write(h[:]); err != nil {
		return err
	}
	if _, err := z.w.Write(payload); err != nil {
		return err
	}
	z.buf = z.buf[:0]
	return nil
}

// Close writes the pending block and the end mark (not closing the
// underlying writer).
func (z *LZ4BlockWriter) Close() error { return z.finish(true) }

// Abandon writes the pending block but no end mark: a stream cut short, as
// a crashed writer leaves it.
func (z *LZ4BlockWriter) Abandon() error { return z.finish(false) }

func (z *LZ4BlockWriter) finish(endMark bool) error {
	if z.closed {
		return nil
	}
	z.closed = true
	if err := z.flush(); err != nil {
		return err
	}
	if !endMark {
		return nil
	}
	var h [21]byte
	copy(h[:], "LZ4Block")
	h[8] = 0x10 | lz4Level
	_, err := z.w.Write(h[:])
	return err
}

// SnappyStreamWriter writes snappy-java's SnappyOutputStream format: the
// 16-byte header (0x82 "SNAPPY" 0x00, big-endian version 1 and minimum
// compatible version 1), then chunks of a big-endian int32 length and one
// raw Snappy block of up to 32 KiB of input.
type SnappyStreamWriter struct {
	w      io.Writer
	buf    []byte
	header bool
}

const snappyChunk = 32 << 10

// NewSnappyStreamWriter returns a writer of snappy-java's stream format.
func NewSnappyStreamWriter(w io.Writer) *SnappyStreamWriter {
	return &SnappyStreamWriter{w: w, buf: make([]byte, 0, snappyChunk)}
}

// Write buffers p and writes whole chunks.
func (s *SnappyStreamWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), snappyChunk-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p = p[k:]
		if len(s.buf) == snappyChunk {
			if err := s.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (s *SnappyStreamWriter) flush() error {
	if !s.header {
		s.header = true
		h := []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
		if _, err := s.w.Write(h); err != nil {
			return err
		}
	}
	if len(s.buf) == 0 {
		return nil
	}
	enc := snappy.Encode(nil, s.buf)
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(enc)))
	if _, err := s.w.Write(l[:]); err != nil {
		return err
	}
	_, err := s.w.Write(enc)
	s.buf = s.buf[:0]
	return err
}

// Close writes the pending chunk (not closing the underlying writer).
func (s *SnappyStreamWriter) Close() error { return s.flush() }
