package profiling

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/grafana/pyroscope-go"
)

// Config says where and as whom to send profiles.
type Config struct {
	Server     string            // Pyroscope URL, e.g. http://pyroscope:4040; empty: off
	App        string            // application name, e.g. strata-agent
	Tags       map[string]string // e.g. node=NAME
	UploadRate time.Duration     // 0: the library's default (15 s)
	Logger     *slog.Logger
}

// Profiler is a running profiler; nil when none was started.
type Profiler struct{ p *pyroscope.Profiler }

// Start starts profiling to c.Server, or nothing when it is empty.
func Start(c Config) (*Profiler, error) {
	if c.Server == "" {
		return nil, nil
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: c.App,
		ServerAddress:   c.Server,
		Tags:            c.Tags,
		UploadRate:      c.UploadRate,
		Logger:          logger{log.With("component", "profiling")},
		DisableGCRuns:   true,
		ProfileTypes: []pyroscope.ProfileType{
			pyroscope.ProfileCPU, pyroscope.ProfileAllocSpace, pyroscope.ProfileInuseSpace,
			pyroscope.ProfileAllocObjects, pyroscope.ProfileInuseObjects, pyroscope.ProfileGoroutines,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start profiling: %w", err)
	}
	log.Info("continuous profiling on", "server", c.Server, "app", c.App)
	return &Profiler{p: p}, nil
}

// Stop uploads what was sampled and stops; nil-safe.
func (p *Profiler) Stop() error {
	if p == nil {
		return nil
	}
	if err := p.p.Stop(); err != nil {
		return fmt.Errorf("stop profiling: %w", err)
	}
	return nil
}

// logger adapts slog to pyroscope-go's Logger.
type logger struct{ l *slog.Logger }

func (l logger) Infof(format string, args ...any)  { l.l.Debug(fmt.Sprintf(format, args...)) }
func (l logger) Debugf(format string, args ...any) { l.l.Debug(fmt.Sprintf(format, args...)) }
func (l logger) Errorf(format string, args ...any) {
	l.l.Log(context.Background(), slog.LevelError, fmt.Sprintf(format, args...))
}
