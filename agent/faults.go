package agent

import (
	"context"
	"log/slog"

	"github.com/stratatrace/strata/agent/annotator"
)

// faults owns the kernel fault attribution, when it is loaded.
type faults struct {
	reason string // why it is not loaded
}

func startFaults(cfg Config, log *slog.Logger) (*faults, error) {
	return &faults{reason: "not built into this agent yet"}, nil
}

func (f *faults) kernel() annotator.Kernel { return nil }

func (f *faults) status() string { return "unavailable: " + f.reason }

func (f *faults) run(ctx context.Context, ann *annotator.Annotator, log *slog.Logger) { <-ctx.Done() }

func (f *faults) writeMetrics(p func(name, help string, v any)) {}

func (f *faults) Close() error { return nil }
