package spool

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// ErrFull is returned by Append when the spool holds MaxBytes already.
var ErrFull = errors.New("spool full")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("spool closed")

// errCorrupt marks a frame that fails its length or CRC check.
var errCorrupt = errors.New("corrupt frame")

const (
	frameHeader = 8
	// maxFrame bounds a frame's payload; anything larger is corruption.
	maxFrame = 256 << 20
	hwmFile  = "hwm"
	segExt   = ".seg"
	// minSegmentBytes is the smallest segment size a small volume gets.
	minSegmentBytes = 4 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options tune a spool; zero values take the defaults.
type Options struct {
	// SegmentBytes starts a new segment past this size (default 64 MiB,
	// at most an eighth of the spool's volume, at least 4 KiB).
	SegmentBytes int64
	MaxBytes     int64 // refuse Append past this many unacknowledged bytes (default 1 GiB)
	NoSync       bool  // skip fsync (tests and benchmarks only)
	Logger       *slog.Logger
}

// entry locates one unacknowledged batch.
type entry struct {
	seq uint64
	seg uint64 // first seq of its segment
	off int64
	n   int64     // frame size including header
	at  time.Time // when it was spooled (for a batch found at Open: its segment's modification time)
}

// Spool is safe for concurrent use.
type Spool struct {
	dir  string
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	closed  bool
	entries []entry // unacknowledged, ascending seq
	bytes   int64   // bytes of unacknowledged frames
	acked   uint64
	next    uint64
	cur     *os.File // segment being appended
	curSeg  uint64
	curSize int64
	notify  chan struct{}
}

// Open opens or creates the spool in dir.
func Open(dir string, opts Options) (*Spool, error) {
	if opts.SegmentBytes <= 0 {
		opts.SegmentBytes = 64 << 20
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 30
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create spool dir: %w", err)
	}
	// Acknowledged bytes are freed a segment at a time: on a small volume
	// a segment must be a small part of it.
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) == nil && fs.Blocks > 0 {
		opts.SegmentBytes = max(min(opts.SegmentBytes, int64(fs.Blocks)*fs.Bsize/8), minSegmentBytes)
	}
	s := &Spool{dir: dir, opts: opts, log: opts.Logger.With("component", "spool"), notify: make(chan struct{}, 1)}
	hwm, err := readHWM(dir)
	if err != nil {
		return nil, err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	for _, seg := range segs {
		if err := s.scan(seg); err != nil {
			return nil, err
		}
	}
	if n := len(s.entries); n > 0 {
		hwm = max(hwm, s.entries[n-1].seq)
		s.acked = s.entries[0].seq - 1
	} else {
		s.acked = hwm
	}
	s.next = max(hwm+1, uint64(time.Now().UnixMicro()))
	return s, nil
}

func readHWM(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, hwmFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read spool hwm: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse spool hwm: %w", err)
	}
	return v, nil
}

func listSegments(dir string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list spool: %w", err)
	}
	var segs []uint64
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), segExt)
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, v)
	}
	slices.Sort(segs)
	return segs, nil
}

func segPath(dir string, seg uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", seg, segExt))
}

// scan indexes one segment, truncating it at the first bad frame.
func (s *Spool) scan(seg uint64) error {
	path := segPath(s.dir, seg)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	var mtime time.Time
	if st, err := f.Stat(); err == nil {
		mtime = st.ModTime()
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for {
		payload, n, err := readFrame(r)
		if err == io.EOF {
			break
		}
		if err != nil {
			s.log.Warn("truncating spool segment at a damaged frame", "segment", path, "offset", off, "err", err)
			if err := f.Truncate(off); err != nil {
				return fmt.Errorf("truncate segment: %w", err)
			}
			break
		}
		seq, err := batchSeq(payload)
		if err != nil {
			s.log.Warn("truncating spool segment at an undecodable batch", "segment", path, "offset", off, "err", err)
			if err := f.Truncate(off); err != nil {
				return fmt.Errorf("truncate segment: %w", err)
			}
			break
		}
		s.entries = append(s.entries, entry{seq: seq, seg: seg, off: off, n: n, at: mtime})
		s.bytes += n
		off += n
	}
	if off == 0 {
		return os.Remove(path)
	}
	return nil
}

func batchSeq(payload []byte) (uint64, error) {
	var b stratav1.Batch
	if err := proto.Unmarshal(payload, &b); err != nil {
		return 0, fmt.Errorf("decode batch: %w", err)
	}
	return b.GetSeq(), nil
}

// readFrame returns one frame's payload and the frame's total size.
func readFrame(r io.Reader) ([]byte, int64, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		return nil, 0, fmt.Errorf("read frame header: %w", errCorrupt)
	}
	n := binary.LittleEndian.Uint32(h[0:4])
	if n > maxFrame {
		return nil, 0, fmt.Errorf("frame of %d bytes: %w", n, errCorrupt)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, 0, fmt.Errorf("read frame payload: %w", errCorrupt)
	}
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(h[4:8]) {
		return nil, 0, fmt.Errorf("frame crc: %w", errCorrupt)
	}
	return payload, int64(n) + frameHeader, nil
}

// Append assigns b the next sequence number and writes it durably. It
// returns ErrFull, without writing, when the spool is at MaxBytes.
func (s *Spool) Append(b *stratav1.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.bytes >= s.opts.MaxBytes {
		return ErrFull
	}
	seq := s.next
	b.Seq = seq
	payload, err := proto.Marshal(b)
	if err != nil {
		return fmt.Errorf("encode batch: %w", err)
	}
	frame := make([]byte, frameHeader+len(payload))
	binary.LittleEndian.PutUint32(frame[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(frame[4:8], crc32.Checksum(payload, castagnoli))
	copy(frame[frameHeader:], payload)
	err = s.write(seq, frame)
	if errors.Is(err, unix.ENOSPC) && s.reclaim() {
		// The volume is full of acknowledged bytes: freed, try again.
		err = s.write(seq, frame)
	}
	if err != nil {
		return err
	}
	s.entries = append(s.entries, entry{seq: seq, seg: s.curSeg, off: s.curSize, n: int64(len(frame)), at: time.Now()})
	s.curSize += int64(len(frame))
	s.bytes += int64(len(frame))
	s.next = seq + 1
	select {
	case s.notify <- struct{}{}:
	default:
	}
	return nil
}

// write appends frame, the batch seq, to the current segment, starting a
// new segment first when needed.
func (s *Spool) write(seq uint64, frame []byte) error {
	if s.cur == nil || s.curSize >= s.opts.SegmentBytes {
		if err := s.rotate(seq); err != nil {
			return err
		}
	}
	if _, err := s.cur.Write(frame); err != nil {
		// Cut the partial frame so the next append starts clean.
		_ = s.cur.Truncate(s.curSize)
		return fmt.Errorf("write spool: %w", err)
	}
	if !s.opts.NoSync {
		if err := s.cur.Sync(); err != nil {
			// Not durable, so not accepted: its number is handed out again
			// and must not be found on disk at the next Open.
			_ = s.cur.Truncate(s.curSize)
			return fmt.Errorf("sync spool: %w", err)
		}
	}
	return nil
}

// reclaim frees the acknowledged bytes still on disk — they can only be in
// the segment being appended, every older segment goes once acknowledged —
// by deleting that segment when nothing in it is pending. It reports
// whether it freed anything.
func (s *Spool) reclaim() bool {
	if s.cur == nil || s.curSize == 0 {
		return false
	}
	if n := len(s.entries); n > 0 && s.entries[n-1].seg == s.curSeg {
		return false // pending batches live in it
	}
	s.cur.Close()
	s.cur = nil
	if err := os.Remove(segPath(s.dir, s.curSeg)); err != nil {
		s.log.Warn("remove acknowledged spool segment", "err", err)
	}
	// The numbers it held are on disk nowhere else now.
	if err := s.writeHWM(s.next - 1); err != nil {
		s.log.Warn("record spool high-water mark", "err", err)
	}
	return true
}

// rotate starts a segment whose first batch is seq and records the
// high-water mark of the numbers it may hold from now on.
func (s *Spool) rotate(seq uint64) error {
	if s.cur != nil {
		if err := s.cur.Close(); err != nil {
			return fmt.Errorf("close segment: %w", err)
		}
		s.cur = nil
		// Ack keeps the segment being appended; drop it now if it is done.
		if len(s.entries) == 0 || s.entries[0].seg > s.curSeg {
			if err := os.Remove(segPath(s.dir, s.curSeg)); err != nil {
				return fmt.Errorf("remove segment: %w", err)
			}
		}
	}
	f, err := os.OpenFile(segPath(s.dir, seq), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	s.cur, s.curSeg, s.curSize = f, seq, 0
	return s.writeHWM(seq)
}

// writeHWM persists seq as assigned. Every number handed out is at least
// the first seq of the current segment, so writing it per segment suffices
// with the scan on Open covering the rest.
func (s *Spool) writeHWM(seq uint64) error {
	tmp := filepath.Join(s.dir, hwmFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(seq, 10)+"\n"), 0o640); err != nil {
		return fmt.Errorf("write spool hwm: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, hwmFile)); err != nil {
		return fmt.Errorf("write spool hwm: %w", err)
	}
	return nil
}

// Notify returns a channel that receives after an Append.
func (s *Spool) Notify() <-chan struct{} { return s.notify }

// Next returns the first unacknowledged batch with a sequence number above
// after, or nil when there is none.
func (s *Spool) Next(after uint64) (*stratav1.Batch, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	i, _ := slices.BinarySearchFunc(s.entries, after+1, func(e entry, seq uint64) int {
		switch {
		case e.seq < seq:
			return -1
		case e.seq > seq:
			return 1
		}
		return 0
	})
	if i == len(s.entries) {
		s.mu.Unlock()
		return nil, nil
	}
	e := s.entries[i]
	s.mu.Unlock()

	// Segments are append-only and deleted only once acknowledged; a
	// concurrent Ack may delete this one, which reads as "already sent".
	f, err := os.Open(segPath(s.dir, e.seg))
	if errors.Is(err, os.ErrNotExist) {
		return s.Next(max(after, e.seq))
	}
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	buf := make([]byte, e.n)
	if _, err := f.ReadAt(buf, e.off); err != nil {
		return nil, fmt.Errorf("read segment: %w", err)
	}
	if crc32.Checksum(buf[frameHeader:], castagnoli) != binary.LittleEndian.Uint32(buf[4:8]) {
		return nil, fmt.Errorf("read batch %d: %w", e.seq, errCorrupt)
	}
	var b stratav1.Batch
	if err := proto.Unmarshal(buf[frameHeader:], &b); err != nil {
		return nil, fmt.Errorf("decode batch %d: %w", e.seq, err)
	}
	return &b, nil
}

// Ack marks every batch up to and including seq acknowledged and deletes
// the segments that hold nothing else.
func (s *Spool) Ack(seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if seq <= s.acked {
		return nil
	}
	s.acked = seq
	n := 0
	for n < len(s.entries) && s.entries[n].seq <= seq {
		s.bytes -= s.entries[n].n
		n++
	}
	if n == 0 {
		return nil
	}
	// A segment can go when no remaining entry lives in it and it is not
	// the one being appended; that one goes too once nothing in it is
	// pending and it has grown to a quarter of a segment, so acknowledged
	// bytes never fill a small volume (a new segment starts at the next
	// Append).
	firstLive := ^uint64(0)
	if n < len(s.entries) {
		firstLive = s.entries[n].seg
	}
	var err error
	var lastSeg uint64
	for _, e := range s.entries[:n] {
		if e.seg == lastSeg || e.seg >= firstLive || (s.cur != nil && e.seg == s.curSeg) {
			continue
		}
		lastSeg = e.seg
		if rerr := os.Remove(segPath(s.dir, e.seg)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove segment: %w", rerr)
		}
	}
	s.entries = slices.Delete(s.entries, 0, n)
	if len(s.entries) == 0 && s.curSize >= s.opts.SegmentBytes/4 {
		s.reclaim()
	}
	return err
}

// Stats describes what the spool holds.
type Stats struct {
	Pending      int    // unacknowledged batches
	PendingBytes int64  // their size on disk
	Acked        uint64 // highest acknowledged seq
	NextSeq      uint64
	// Oldest is when the oldest unacknowledged batch was spooled (zero
	// when none is): how far behind the collector is. For batches found
	// at Open it is their segment's last modification, so it errs young.
	Oldest time.Time
}

// Stats returns a snapshot.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Pending: len(s.entries), PendingBytes: s.bytes, Acked: s.acked, NextSeq: s.next}
	if len(s.entries) > 0 {
		st.Oldest = s.entries[0].at
	}
	return st
}

// Close closes the current segment. Unacknowledged batches stay on disk.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cur != nil {
		return s.cur.Close()
	}
	return nil
}

// Acked returns the highest acknowledged sequence number.
func (s *Spool) Acked() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked
}
