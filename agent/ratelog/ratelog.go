package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a Handler; zero values take defaults.
type Options struct {
	// Burst is how many lines of one message pass per Interval (default 5).
	Burst int
	// Interval is the window Burst counts in (default 10 s).
	Interval time.Duration
	// Min is the lowest level limited; lower levels pass unlimited
	// (default slog.LevelInfo).
	Min slog.Level
	// Now is the clock, for tests; nil means time.Now.
	Now func() time.Time
}

// maxKeys bounds the messages tracked; beyond it, new messages share one
// budget. Messages are constants in code, so this is never reached in
// practice.
const maxKeys = 4096

type key struct {
	level slog.Level
	msg   string
}

type window struct {
	start      time.Time
	passed     int
	suppressed uint64
}

// state is shared by a Handler and every handler derived from it.
type state struct {
	opts       Options
	mu         sync.Mutex
	windows    map[key]*window
	suppressed atomic.Uint64
}

// Handler limits repeated messages; see the package comment.
type Handler struct {
	next slog.Handler
	st   *state
}

// New wraps next.
func New(next slog.Handler, opts Options) *Handler {
	if opts.Burst <= 0 {
		opts.Burst = 5
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{next: next, st: &state{opts: opts, windows: map[key]*window{}}}
}

// Suppressed returns how many lines were held back since New.
func (h *Handler) Suppressed() uint64 { return h.st.suppressed.Load() }

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler: it passes r, with suppressed=N when lines
// of its message were held back since the last one passed, or drops it.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < h.st.opts.Min {
		return h.next.Handle(ctx, r)
	}
	held, pass := h.st.admit(key{r.Level, r.Message})
	if !pass {
		return nil
	}
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Uint64("suppressed", held))
	}
	return h.next.Handle(ctx, r)
}

// admit decides whether a line of k passes and returns the lines held back
// since the last one that did.
func (s *state) admit(k key) (uint64, bool) {
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.windows[k]
	if !ok {
		if len(s.windows) >= maxKeys {
			k = key{}
			w = s.windows[k]
		}
		if w == nil {
			w = &window{start: now}
			s.windows[k] = w
		}
	}
	if now.Sub(w.start) >= s.opts.Interval {
		w.start, w.passed = now, 0
	}
	if w.passed >= s.opts.Burst {
		w.suppressed++
		s.suppressed.Add(1)
		return 0, false
	}
	w.passed++
	held := w.suppressed
	w.suppressed = 0
	return held, true
}

// Flush passes, for each message whose window has ended with lines held
// back, one line of that message with suppressed=N and burst_ended=true,
// so that a flood that stops still says how many lines it held back; it
// forgets the messages whose window ended with nothing held back. The
// line carries the message's level and text, not the attributes of the
// lines held back. Run calls it every Interval.
func (h *Handler) Flush(ctx context.Context) error {
	type held struct {
		k key
		n uint64
	}
	now := h.st.opts.Now()
	var out []held
	h.st.mu.Lock()
	for k, w := range h.st.windows {
		if now.Sub(w.start) < h.st.opts.Interval {
			continue
		}
		if w.suppressed == 0 {
			delete(h.st.windows, k)
			continue
		}
		out = append(out, held{k, w.suppressed})
		w.suppressed = 0
	}
	h.st.mu.Unlock()
	for _, d := range out {
		r := slog.NewRecord(now, d.k.level, d.k.msg, 0)
		r.AddAttrs(slog.Uint64("suppressed", d.n), slog.Bool("burst_ended", true))
		if err := h.next.Handle(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// Run calls Flush every Interval, and once more when ctx ends.
func (h *Handler) Run(ctx context.Context) {
	t := time.NewTicker(h.st.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = h.Flush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			_ = h.Flush(ctx)
		}
	}
}

// WithAttrs implements slog.Handler; the result shares h's limits.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), st: h.st}
}

// WithGroup implements slog.Handler; the result shares h's limits.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), st: h.st}
}
