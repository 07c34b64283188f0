package resolver

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/stratatrace/strata/agent/procmem"
)

// Pool lends one Resolver (whose scratch buffers cannot be shared) to each
// concurrent caller, up to one per Resolver it holds, so that hook sessions
// and fault samples resolve in parallel; a caller beyond that waits for a
// Resolver to come back. It is safe for concurrent use. Each kind of
// degraded answer (a Result.Warning: hidden PFNs, unreadable kpageflags) is
// logged once, at warn level, the first time a Resolver gives it.
type Pool struct {
	free chan *Resolver
	log  *slog.Logger

	mu     sync.Mutex
	warned map[string]bool
}

// NewPool opens n Resolvers on fs with opts (n < 1 means one). Give it one
// per CPU: a Resolver is CPU-bound while it reads.
func NewPool(fs procmem.FS, n int, opts Options, log *slog.Logger) (*Pool, error) {
	n = max(n, 1)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{free: make(chan *Resolver, n), log: log, warned: map[string]bool{}}
	for range n {
		r, err := New(fs, opts)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("open resolver pool: %w", err)
		}
		p.free <- r
	}
	return p, nil
}

// ResolveBatch is Resolver.ResolveBatch on a free Resolver, with one
// difference: when it fails as a whole (the process is gone), every
// out[i].Err is that error too, so callers can read the results alone.
func (p *Pool) ResolveBatch(pid int, reqs []Request, out []Result) error {
	if len(out) < len(reqs) {
		return fmt.Errorf("resolve batch: %d results for %d requests", len(out), len(reqs))
	}
	r := <-p.free
	err := r.ResolveBatch(pid, reqs, out)
	p.free <- r
	if err != nil {
		for i := range reqs {
			out[i] = Result{Err: err}
		}
		return err
	}
	for i := range reqs {
		if w := out[i].Warning; w != nil {
			p.warnOnce(w)
		}
	}
	return nil
}

func (p *Pool) warnOnce(w error) {
	p.mu.Lock()
	first := !p.warned[w.Error()]
	p.warned[w.Error()] = true
	p.mu.Unlock()
	if first {
		p.log.Warn("page resolution degraded", "reason", w)
	}
}

// Close closes the Resolvers; call it when no ResolveBatch runs.
func (p *Pool) Close() error {
	var errs []error
	for {
		select {
		case r := <-p.free:
			errs = append(errs, r.Close())
		default:
			if err := errors.Join(errs...); err != nil {
				return fmt.Errorf("close resolver pool: %w", err)
			}
			return nil
		}
	}
}
