package spool

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/test/testenv"
)

// Once every batch is acknowledged, the segment being appended is deleted
// too (when it holds a quarter of a segment or more), so acknowledged
// bytes do not stay on disk until the segment fills.
func TestAckReclaimsCurrentSegment(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{SegmentBytes: 64 << 10, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last uint64
	for range 4 {
		b := batch("n", 500) // ~5 KiB
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		last = b.Seq
	}
	if err := s.Ack(last - 1); err != nil {
		t.Fatal(err)
	}
	if segs := segments(t, dir); len(segs) != 1 {
		t.Fatalf("segments with a batch pending: %v", segs)
	}
	if err := s.Ack(last); err != nil {
		t.Fatal(err)
	}
	if segs := segments(t, dir); len(segs) != 0 {
		t.Fatalf("acknowledged segment left on disk: %v", segs)
	}
	// Appending goes on in a new segment, with increasing numbers.
	b := batch("n", 1)
	if err := s.Append(b); err != nil || b.Seq <= last {
		t.Fatalf("append after reclaim: seq %d after %d, %v", b.Seq, last, err)
	}
	if got, err := s.Next(last); err != nil || got == nil || got.Seq != b.Seq {
		t.Fatalf("next = %v, %v", got, err)
	}
}

// tmpfsVolume mounts a tmpfs of size bytes and unmounts it at the end.
func tmpfsVolume(t *testing.T, size string) string {
	t.Helper()
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "vol")
	if err := unix.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("skipping: mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// A spool on a volume smaller than one default segment (1 MiB here, against
// 64 MiB) keeps accepting batches that are acknowledged as they come —
// 4 MiB of them — and, once full of pending batches, refuses only until
// they are acknowledged. Before, the acknowledged bytes stayed in the
// segment being appended until the volume was full, and every later batch
// was refused with nothing pending.
func TestSmallVolumeReclaimsAcknowledged(t *testing.T) {
	dir := tmpfsVolume(t, "1m")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 400 {
		b := batch("n", 1000) // ~10 KiB
		if err := s.Append(b); err != nil {
			t.Fatalf("append %d with nothing pending: %v (stats %+v)", i, err, s.Stats())
		}
		if err := s.Ack(b.Seq); err != nil {
			t.Fatal(err)
		}
	}
	// Now nobody acknowledges: the volume fills with pending batches.
	var last uint64
	for i := 0; ; i++ {
		b := batch("n", 1000)
		err := s.Append(b)
		if err == nil {
			last = b.Seq
			continue
		}
		if !errors.Is(err, unix.ENOSPC) || i < 50 {
			t.Fatalf("append %d: %v, want the volume full after ~90", i, err)
		}
		break
	}
	if err := s.Ack(last); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		b := batch("n", 1000)
		if err := s.Append(b); err != nil {
			t.Fatalf("append %d after everything was acknowledged: %v", i, err)
		}
		s.Ack(b.Seq)
	}

	// With the volume nearly full of something else, the acknowledged bytes
	// of the segment being appended (under a quarter of a segment, so Ack
	// kept them) are freed when a write finds no space, and the write
	// retried.
	for len(segments(t, dir)) > 0 { // start from an Ack that deleted the segment
		b := batch("n", 1000)
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		s.Ack(b.Seq)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	filler := make([]byte, int64(st.Bavail)*st.Bsize-20<<10)
	if err := os.WriteFile(filepath.Join(dir, "filler"), filler, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		b := batch("n", 100) // ~1 KiB
		if err := s.Append(b); err != nil {
			t.Fatalf("append %d into the last 20 KiB, nothing pending: %v", i, err)
		}
		s.Ack(b.Seq)
	}
}

// After a reclaim left no segment at all, a reopened spool still numbers
// above everything it handed out, whatever the clock says.
func TestReclaimKeepsNumbering(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{SegmentBytes: 8 << 10, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 3 {
		b := batch("n", 500)
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		last = b.Seq
	}
	s.Ack(last)
	s.Close()
	if segs := segments(t, dir); len(segs) != 0 {
		t.Fatalf("segments %v", segs)
	}
	hwm, err := readHWM(dir)
	if err != nil || hwm != last {
		t.Fatalf("hwm %d, %v; want %d", hwm, err, last)
	}
}
