package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// memorySink is what sampleMemory needs of the annotator.
type memorySink interface {
	Processes() []annotator.Process
	AddMemory(*stratav1.ProcessMemory)
}

// sampleMemory reads the resident memory of every process with an open hook
// session from /proc/PID/status each interval and queues it for the
// collector, which measures RDD memory occupation against it. It needs no
// probes: it runs whether or not the fault tracer loaded. A process that
// exited between the listing and the read is skipped; any other read error
// is logged (rate-limited by the agent's logger).
func sampleMemory(ctx context.Context, fs procmem.FS, sink memorySink, interval time.Duration, log *slog.Logger) {
	log = log.With("component", "memory")
	every(ctx, interval, func() {
		for _, p := range sink.Processes() {
			if m, err := readMemory(fs, p, time.Now()); err == nil {
				sink.AddMemory(m)
			} else if !errors.Is(err, procmem.ErrProcessGone) {
				log.Warn("read resident memory", "pid", p.PID, "err", err)
			}
		}
	})
}

// readMemory reads one process's resident memory as a ProcessMemory.
func readMemory(fs procmem.FS, p annotator.Process, now time.Time) (*stratav1.ProcessMemory, error) {
	st, err := fs.Status(int(p.PID))
	if err != nil {
		return nil, err
	}
	return &stratav1.ProcessMemory{
		AppId: p.AppID, ExecutorId: p.ExecutorID, Pid: p.PID, TimeUnixNano: now.UnixNano(),
		RssBytes: st.VmRSS, RssAnonBytes: st.RssAnon, RssFileBytes: st.RssFile, RssShmemBytes: st.RssShmem,
		HwmBytes: st.VmHWM,
	}, nil
}
