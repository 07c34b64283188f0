package ratelog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestBurstThenSuppressedCount(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1000, 0)}
	h := New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), Options{Burst: 3, Interval: time.Second, Now: c.now})
	log := slog.New(h)
	// A derived logger shares the parent's budget.
	sess := log.With("session", 7)
	for i := range 1000 {
		sess.Warn("block not mirrored in kernel", "block", i)
	}
	log.Warn("another message")
	log.Debug("debug passes unlimited")
	log.Debug("debug passes unlimited")
	c.t = c.t.Add(time.Second)
	sess.Warn("block not mirrored in kernel", "block", 1000)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var flood, other, debug int
	for _, l := range lines {
		switch {
		case strings.Contains(l, "block not mirrored"):
			flood++
			if !strings.Contains(l, "session=7") {
				t.Errorf("derived logger lost its attributes: %s", l)
			}
		case strings.Contains(l, "another message"):
			other++
		case strings.Contains(l, "debug passes"):
			debug++
		}
	}
	if flood != 4 || other != 1 || debug != 2 {
		t.Fatalf("lines: flood %d (want 3 + 1 after the window), other %d (want 1), debug %d (want 2):\n%s", flood, other, debug, buf.String())
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "block=1000") || !strings.Contains(last, "suppressed=997") {
		t.Errorf("first line of the next window = %q, want block=1000 suppressed=997", last)
	}
	if got := h.Suppressed(); got != 997 {
		t.Errorf("Suppressed() = %d, want 997", got)
	}
}

func TestLevelsAreSeparateKeys(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(New(slog.NewTextHandler(&buf, nil), Options{Burst: 1, Interval: time.Hour}))
	log.Info("same text")
	log.Warn("same text")
	log.Warn("same text")
	if n := strings.Count(buf.String(), "same text"); n != 2 {
		t.Fatalf("%d lines, want one per level:\n%s", n, buf.String())
	}
}

// TestFlushAfterBurst: a flood that stops within its window still says how
// many lines it held back, once the window has ended, and only once.
func TestFlushAfterBurst(t *testing.T) {
	var buf bytes.Buffer
	c := &clock{t: time.Unix(1000, 0)}
	h := New(slog.NewTextHandler(&buf, nil), Options{Burst: 5, Interval: 10 * time.Second, Now: c.now})
	log := slog.New(h)
	for i := range 19987 {
		log.Warn("hook connection refused", "n", i)
	}
	log.Warn("quiet message")
	if err := h.Flush(t.Context()); err != nil || strings.Count(buf.String(), "suppressed") != 0 {
		t.Fatalf("flush inside the window wrote %q (%v)", buf.String(), err)
	}
	c.t = c.t.Add(10 * time.Second)
	if err := h.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(10 * time.Second)
	if err := h.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	last := lines[len(lines)-1]
	if len(lines) != 7 || !strings.Contains(last, `msg="hook connection refused" suppressed=19982 burst_ended=true`) {
		t.Fatalf("lines %d, last %q: want 5 + 1 + one line saying 19982 held back", len(lines), last)
	}
	if h.Suppressed() != 19982 || len(h.st.windows) != 0 {
		t.Errorf("suppressed %d, windows kept %d: want 19982 and none", h.Suppressed(), len(h.st.windows))
	}
}
