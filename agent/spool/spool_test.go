package spool

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func batch(node string, recs int) *stratav1.Batch {
	b := &stratav1.Batch{NodeName: node, BootId: "boot"}
	for i := 0; i < recs; i++ {
		b.Records = append(b.Records, &stratav1.Record{Pid: uint32(i + 1), Vaddr: uint64(i) << 12})
	}
	return b
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAppendNextAckAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{SegmentBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for i := 0; i < 10; i++ {
		b := batch("n1", i+1)
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, b.Seq)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("seqs not consecutive: %v", seqs)
		}
	}
	if err := s.Ack(seqs[3]); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Pending != 6 || st.Acked != seqs[3] {
		t.Fatalf("stats after ack = %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, Options{SegmentBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Every unacknowledged batch comes back, in order, with its records.
	after := s.Stats().Acked
	if after >= seqs[4] {
		t.Fatalf("acked after reopen = %d, want below %d", after, seqs[4])
	}
	var got []uint64
	for {
		b, err := s.Next(after)
		if err != nil {
			t.Fatal(err)
		}
		if b == nil {
			break
		}
		if want := int(b.Seq-seqs[0]) + 1; len(b.Records) != want {
			t.Fatalf("batch %d has %d records, want %d", b.Seq, len(b.Records), want)
		}
		got = append(got, b.Seq)
		after = b.Seq
	}
	// Batches acked before the restart may reappear only if their segment
	// also held unacked ones; those at or below the ack are never lost data.
	if got[len(got)-1] != seqs[9] || len(got) < 6 {
		t.Fatalf("replayed %v, want through %d", got, seqs[9])
	}
	b := batch("n1", 1)
	if err := s.Append(b); err != nil {
		t.Fatal(err)
	}
	if b.Seq <= seqs[9] {
		t.Fatalf("seq after restart %d not above %d", b.Seq, seqs[9])
	}
	if err := s.Ack(b.Seq); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Pending != 0 || st.PendingBytes != 0 {
		t.Fatalf("stats after full ack = %+v", st)
	}
	// Only the segment still being appended may remain.
	if segs := segments(t, dir); len(segs) > 1 {
		t.Fatalf("segments left after full ack: %v", segs)
	}
}

func TestSeqSurvivesLostSegments(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := batch("n", 1)
	if err := s.Append(b); err != nil {
		t.Fatal(err)
	}
	s.Ack(b.Seq)
	s.Close()
	for _, seg := range segments(t, dir) {
		os.Remove(seg)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b2 := batch("n", 1)
	if err := s.Append(b2); err != nil {
		t.Fatal(err)
	}
	if b2.Seq <= b.Seq {
		t.Fatalf("seq reused: %d after %d", b2.Seq, b.Seq)
	}
}

func TestTornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for i := 0; i < 3; i++ {
		b := batch("n", 2)
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, b.Seq)
	}
	s.Close()
	seg := segments(t, dir)[0]
	st, _ := os.Stat(seg)
	// A crash in the middle of the third frame.
	if err := os.Truncate(seg, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Pending != 2 {
		t.Fatalf("pending after torn tail = %d, want 2", st.Pending)
	}
	b := batch("n", 1)
	if err := s.Append(b); err != nil {
		t.Fatal(err)
	}
	if b.Seq <= seqs[1] {
		t.Fatalf("seq %d not above %d", b.Seq, seqs[1])
	}
	after := uint64(0)
	var n int
	for {
		got, err := s.Next(after)
		if err != nil {
			t.Fatalf("next after torn tail: %v", err)
		}
		if got == nil {
			break
		}
		after = got.Seq
		n++
	}
	if n != 3 {
		t.Fatalf("read %d batches, want 3", n)
	}
}

func TestCorruptFrameStopsScan(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, Options{})
	for i := 0; i < 3; i++ {
		s.Append(batch("n", 1))
	}
	s.Close()
	seg := segments(t, dir)[0]
	data, _ := os.ReadFile(seg)
	data[len(data)-1] ^= 0xff // flip a payload byte of the last frame
	os.WriteFile(seg, data, 0o640)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Pending != 2 {
		t.Fatalf("pending = %d, want 2", st.Pending)
	}
}

func TestFullRefusesWithoutWriting(t *testing.T) {
	s, err := Open(t.TempDir(), Options{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(batch("n", 20)); err != nil {
		t.Fatal(err)
	}
	b := batch("n", 1)
	if err := s.Append(b); !errors.Is(err, ErrFull) {
		t.Fatalf("append over MaxBytes = %v, want ErrFull", err)
	}
	if st := s.Stats(); st.Pending != 1 {
		t.Fatalf("pending = %d, want 1", st.Pending)
	}
	first, _ := s.Next(0)
	s.Ack(first.Seq)
	if err := s.Append(b); err != nil {
		t.Fatalf("append after ack: %v", err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{3, 0, 0, 0, 1, 2, 3, 4, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(segPath(dir, 1), data, 0o640); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{NoSync: true})
		if err != nil {
			t.Fatalf("open over arbitrary segment bytes: %v", err)
		}
		defer s.Close()
		for after := uint64(0); ; {
			b, err := s.Next(after)
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			if b == nil {
				break
			}
			after = b.Seq
		}
	})
}

// Stats.Oldest is when the oldest unacknowledged batch was spooled: the
// first batch's time until it is acked, the second's after, zero when
// everything is acked; after a restart, its segment's modification time.
func TestStatsOldest(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Stats().Oldest.IsZero() {
		t.Fatal("empty spool has an oldest batch")
	}
	before := time.Now()
	first := batch("n1", 1)
	if err := s.Append(first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	second := batch("n1", 1)
	if err := s.Append(second); err != nil {
		t.Fatal(err)
	}
	if o := s.Stats().Oldest; o.Before(before) || !o.Before(mid) {
		t.Fatalf("oldest %v, want between %v and %v", o, before, mid)
	}
	s.Ack(first.Seq)
	if o := s.Stats().Oldest; o.Before(mid) {
		t.Fatalf("oldest after the first ack %v, want after %v", o, mid)
	}
	s.Close()
	old := time.Now().Add(-time.Hour)
	for _, seg := range segments(t, dir) {
		os.Chtimes(seg, old, old)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if o := s.Stats().Oldest; !o.Equal(old.Truncate(time.Microsecond)) && !o.Equal(old) {
		t.Fatalf("oldest after reopen %v, want the segment's mtime %v", o, old)
	}
	s.Ack(second.Seq)
	if !s.Stats().Oldest.IsZero() {
		t.Fatal("oldest set with nothing pending")
	}
}
