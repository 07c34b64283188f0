package resolver

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver/resolvertest"
)

// warnCounter counts the warn records a logger receives.
type warnCounter struct{ n atomic.Int64 }

func (w *warnCounter) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		w.n.Add(1)
	}
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// TestPoolConcurrent: more callers than Resolvers, each resolving this
// process's own pages; every answer is complete and the pool gets all of
// its Resolvers back.
func TestPoolConcurrent(t *testing.T) {
	const pages, callers, rounds = 64, 8, 20
	base := resolvertest.Touched(t, pages)
	p, err := NewPool(procmem.Default(), 2, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ps := procmem.PageSize()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqs := []Request{{VAddr: base, Length: pages / 2 * ps, CPUNode: -1}, {VAddr: base + pages/2*ps, Length: pages / 2 * ps, CPUNode: -1}}
			out := make([]Result, len(reqs))
			for range rounds {
				if err := p.ResolveBatch(os.Getpid(), reqs, out); err != nil {
					errs <- err
					return
				}
				for i, r := range out {
					if r.Err != nil || r.Pages != pages/2 || r.Present != pages/2 {
						errs <- errors.New("range " + strconv.Itoa(i) + ": pages " + strconv.FormatUint(r.Pages, 10) +
							" present " + strconv.FormatUint(r.Present, 10) + ", want 32 and 32")
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(p.q.free) != 2 {
		t.Fatalf("%d resolvers back in the pool, want 2", len(p.q.free))
	}
}

// TestPoolProcessGone: a whole-batch failure is every result's Err.
func TestPoolProcessGone(t *testing.T) {
	p, err := NewPool(procmem.Default(), 1, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := []Result{{Pages: 99}, {Pages: 99}, {Pages: 99}} // stale answers of an earlier call
	err = p.ResolveBatch(1<<30, []Request{{VAddr: 4096, Length: 4096}, {VAddr: 8192, Length: 4096}}, out)
	if !errors.Is(err, ErrProcessGone) {
		t.Fatalf("pid beyond pid_max: %v, want ErrProcessGone", err)
	}
	for i, r := range out[:2] {
		if !errors.Is(r.Err, ErrProcessGone) || r.Pages != 0 {
			t.Errorf("result %d = %+v, want only Err", i, r)
		}
	}
	if out[2].Pages != 99 {
		t.Error("a result beyond the requests was touched")
	}
	if err := p.ResolveBatch(os.Getpid(), make([]Request, 2), make([]Result, 1)); err == nil {
		t.Error("short out accepted")
	}
}

// TestPoolWarnsOnce: a /proc without kpageflags degrades every answer the
// same way; the pool says so once, whichever Resolver answers.
func TestPoolWarnsOnce(t *testing.T) {
	root := t.TempDir() // holds this process's directory and nothing else
	self := strconv.Itoa(os.Getpid())
	if err := os.Symlink(filepath.Join("/proc", self), filepath.Join(root, self)); err != nil {
		t.Fatal(err)
	}
	base := resolvertest.Touched(t, 4)
	var warns warnCounter
	p, err := NewPool(procmem.FS{Proc: root, Sys: "/sys"}, 2, Options{}, slog.New(&warns))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 10 {
		out := make([]Result, 1)
		if err := p.ResolveBatch(os.Getpid(), []Request{{VAddr: base, Length: 4 * procmem.PageSize(), CPUNode: -1}}, out); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(out[0].Warning, ErrFlagsUnavailable) {
			t.Fatalf("warning %v, want ErrFlagsUnavailable", out[0].Warning)
		}
	}
	if n := warns.n.Load(); n != 1 {
		t.Fatalf("%d warnings logged, want 1", n)
	}
}
