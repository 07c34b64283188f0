package fetcher

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/stratatrace/strata/collector/fetcher/xxh32"
)

// Codecs of compressed inputs, named by file suffix as Spark names them.
const (
	codecNone   = ""
	codecLZ4    = "lz4"
	codecSnappy = "snappy"
	codecZstd   = "zstd"
	codecGzip   = "gz"
	codecLZF    = "lzf"
)

// codecOf returns the codec a file name's suffix says (".inprogress" is
// ignored), or codecNone.
func codecOf(name string) string {
	name = strings.TrimSuffix(name, ".inprogress")
	switch strings.ToLower(path.Ext(name)) {
	case ".lz4":
		return codecLZ4
	case ".snappy":
		return codecSnappy
	case ".zstd", ".zst":
		return codecZstd
	case ".gz":
		return codecGzip
	case ".lzf":
		return codecLZF
	}
	return codecNone
}

// decompress wraps r in a streaming decoder for codec. The returned closer
// releases the decoder's resources (not r).
func decompress(r io.Reader, codec string) (io.Reader, func(), error) {
	nop := func() {}
	switch codec {
	case codecNone:
		return r, nop, nil
	case codecLZ4:
		return newLZ4BlockReader(r), nop, nil
	case codecSnappy:
		return newSnappyStreamReader(r), nop, nil
	case codecZstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(128<<20))
		if err != nil {
			return nil, nop, fmt.Errorf("open zstd stream: %w", err)
		}
		return d, d.Close, nil
	case codecGzip:
		g, err := gzip.NewReader(r)
		if err != nil {
			return nil, nop, fmt.Errorf("open gzip stream: %w: %w", ErrCorrupt, err)
		}
		return g, func() { g.Close() }, nil
	}
	return nil, nop, fmt.Errorf("open %s stream: %w", codec, ErrUnsupportedCodec)
}

// lz4-java's LZ4BlockOutputStream (what Spark's "lz4" codec writes) is a
// sequence of blocks, each with a 21-byte header:
//
//	magic        8 bytes  "LZ4Block"
//	token        1 byte   high nibble: method (0x10 raw, 0x20 LZ4);
//	                      low nibble: level, block size = 1 << (10 + level)
//	compressed   int32 LE length of the payload
//	original     int32 LE length of the decoded block
//	checksum     int32 LE xxHash32(decoded, seed 0x9747B28C) & 0x0FFFFFFF
//
// followed by the payload (an LZ4 block, or the bytes themselves when raw).
// finish() writes an empty raw block (both lengths 0) as an end mark; more
// streams may follow it. A stream that ends without the end mark was cut
// short: the reader returns io.ErrUnexpectedEOF after the last whole block.
const (
	lz4BlockMagic     = "LZ4Block"
	lz4BlockHeaderLen = 8 + 1 + 4 + 4 + 4
	lz4MethodRaw      = 0x10
	lz4MethodLZ4      = 0x20
	lz4LevelBase      = 10
	lz4Seed           = 0x9747b28c
	lz4ChecksumMask   = 0x0fffffff
	lz4MaxBlock       = 1 << (lz4LevelBase + 15)
)

type lz4BlockReader struct {
	r      io.Reader
	hdr    [lz4BlockHeaderLen]byte
	in     []byte
	out    []byte
	pos    int
	ended  bool // the last block read was an end mark
	err    error
	blocks int
}

func newLZ4BlockReader(r io.Reader) *lz4BlockReader { return &lz4BlockReader{r: r} }

func (z *lz4BlockReader) Read(p []byte) (int, error) {
	for z.pos >= len(z.out) {
		if z.err != nil {
			return 0, z.err
		}
		if z.err = z.nextBlock(); z.err != nil {
			z.out, z.pos = z.out[:0], 0 // never serve a half-decoded block
		}
	}
	n := copy(p, z.out[z.pos:])
	z.pos += n
	return n, nil
}

func (z *lz4BlockReader) nextBlock() error {
	z.out, z.pos = z.out[:0], 0
	n, err := io.ReadFull(z.r, z.hdr[:])
	if errors.Is(err, io.EOF) && n == 0 {
		if z.ended {
			return io.EOF
		}
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	if string(z.hdr[:8]) != lz4BlockMagic {
		return fmt.Errorf("read lz4 block %d: %w: bad magic", z.blocks, ErrCorrupt)
	}
	token := z.hdr[8]
	method, level := int(token&0xf0), int(token&0x0f)
	clen := int(int32(binary.LittleEndian.Uint32(z.hdr[9:])))
	olen := int(int32(binary.LittleEndian.Uint32(z.hdr[13:])))
	sum := binary.LittleEndian.Uint32(z.hdr[17:])
	limit := 1 << (lz4LevelBase + level)
	switch {
	case method != lz4MethodRaw && method != lz4MethodLZ4:
		return fmt.Errorf("read lz4 block %d: %w: method %#x", z.blocks, ErrCorrupt, method)
	case limit > lz4MaxBlock, olen < 0, clen < 0, olen > limit,
		method == lz4MethodRaw && clen != olen,
		method == lz4MethodLZ4 && clen > lz4.CompressBlockBound(olen):
		return fmt.Errorf("read lz4 block %d: %w: bad lengths %d/%d", z.blocks, ErrCorrupt, clen, olen)
	}
	z.blocks++
	if olen == 0 {
		if clen != 0 || sum != 0 {
			return fmt.Errorf("read lz4 block %d: %w: bad end mark", z.blocks, ErrCorrupt)
		}
		z.ended = true
		return nil
	}
	z.ended = false
	if cap(z.in) < clen {
		z.in = make([]byte, clen)
	}
	z.in = z.in[:clen]
	if _, err := io.ReadFull(z.r, z.in); err != nil {
		return io.ErrUnexpectedEOF
	}
	if method == lz4MethodRaw {
		z.out = append(z.out[:0], z.in...)
	} else {
		if cap(z.out) < olen {
			z.out = make([]byte, olen)
		}
		z.out = z.out[:olen]
		got, err := lz4.UncompressBlock(z.in, z.out)
		if err != nil || got != olen {
			return fmt.Errorf("read lz4 block %d: %w: decode: %v", z.blocks, ErrCorrupt, err)
		}
	}
	if xxh32.Sum(z.out, lz4Seed)&lz4ChecksumMask != sum {
		return fmt.Errorf("read lz4 block %d: %w: checksum mismatch", z.blocks, ErrCorrupt)
	}
	return nil
}

// snappy-java's SnappyOutputStream (what Spark's "snappy" codec writes) is a
// 16-byte header — the magic 0x82 "SNAPPY" 0x00, then two big-endian int32:
// format version and minimum compatible version (both 1) — followed by
// chunks, each a big-endian int32 length and that many bytes of one raw
// Snappy block. Concatenated streams repeat the header; the reader skips
// it wherever a chunk would start. This is not Snappy's own framing format
// (stream identifier 0xff "sNaPpY", CRC-32C per chunk).
const (
	snappyJavaMagic     = "\x82SNAPPY\x00"
	snappyJavaHeaderLen = 16
	snappyMaxChunk      = 64 << 20
)

type snappyStreamReader struct {
	r      io.Reader
	header bool // a header was read
	in     []byte
	out    []byte
	pos    int
	err    error
	chunks int
}

func newSnappyStreamReader(r io.Reader) *snappyStreamReader { return &snappyStreamReader{r: r} }

func (s *snappyStreamReader) Read(p []byte) (int, error) {
	for s.pos >= len(s.out) {
		if s.err != nil {
			return 0, s.err
		}
		if s.err = s.nextChunk(); s.err != nil {
			s.out, s.pos = s.out[:0], 0 // never serve a half-decoded chunk
		}
	}
	n := copy(p, s.out[s.pos:])
	s.pos += n
	return n, nil
}

func (s *snappyStreamReader) nextChunk() error {
	s.out, s.pos = s.out[:0], 0
	var lenb [8]byte
	n, err := io.ReadFull(s.r, lenb[:4])
	if errors.Is(err, io.EOF) && n == 0 {
		if !s.header {
			return fmt.Errorf("read snappy stream: %w: empty", ErrCorrupt)
		}
		return io.EOF
	}
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	if lenb[0] == snappyJavaMagic[0] {
		// A (repeated) stream header.
		if _, err := io.ReadFull(s.r, lenb[4:8]); err != nil {
			return io.ErrUnexpectedEOF
		}
		if string(lenb[:8]) != snappyJavaMagic {
			return fmt.Errorf("read snappy chunk %d: %w: bad magic", s.chunks, ErrCorrupt)
		}
		var ver [8]byte
		if _, err := io.ReadFull(s.r, ver[:]); err != nil {
			return io.ErrUnexpectedEOF
		}
		if compat := binary.BigEndian.Uint32(ver[4:]); compat > 1 {
			return fmt.Errorf("read snappy stream: %w: minimum compatible version %d", ErrUnsupportedCodec, compat)
		}
		s.header = true
		return nil
	}
	if !s.header {
		return fmt.Errorf("read snappy stream: %w: no snappy-java header", ErrCorrupt)
	}
	clen := int(binary.BigEndian.Uint32(lenb[:4]))
	if clen < 0 || clen > snappyMaxChunk {
		return fmt.Errorf("read snappy chunk %d: %w: length %d", s.chunks, ErrCorrupt, clen)
	}
	if cap(s.in) < clen {
		s.in = make([]byte, clen)
	}
	s.in = s.in[:clen]
	if _, err := io.ReadFull(s.r, s.in); err != nil {
		return io.ErrUnexpectedEOF
	}
	dlen, err := snappy.DecodedLen(s.in)
	if err != nil || dlen > snappyMaxChunk {
		return fmt.Errorf("read snappy chunk %d: %w: %v", s.chunks, ErrCorrupt, err)
	}
	if cap(s.out) < dlen {
		s.out = make([]byte, dlen)
	}
	out, err := snappy.Decode(s.out[:dlen], s.in)
	if err != nil {
		return fmt.Errorf("read snappy chunk %d: %w: %v", s.chunks, ErrCorrupt, err)
	}
	s.out = out
	s.chunks++
	return nil
}
