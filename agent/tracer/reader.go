package tracer

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// readLoop drains the ring on a short deadline (the kernel submits without
// waking us unless the ring fills past wake_bytes), doubling it up to
// IdleDrainInterval while the ring stays empty; it hands events to the
// bounded channel without ever blocking, and checks tracked processes for
// exit between drains. It never logs per event.
func (t *Tracer) readLoop() {
	defer t.wg.Done()
	var rec ringbuf.Record
	lastLive, lastSweep := time.Now(), time.Now()
	wait := t.cfg.DrainInterval
	for {
		t.reader.SetDeadline(time.Now().Add(wait))
		err := t.reader.ReadInto(&rec)
		switch {
		case err == nil:
			t.handle(rec.RawSample)
			wait = t.cfg.DrainInterval
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			wait = min(2*wait, t.cfg.IdleDrainInterval)
		case errors.Is(err, ringbuf.ErrClosed), errors.Is(err, os.ErrClosed):
			return
		default:
			t.log.Error("read ring", "error", err)
			time.Sleep(t.cfg.DrainInterval)
		}
		if time.Since(lastLive) >= t.cfg.LivenessInterval {
			lastLive = time.Now()
			t.checkLiveness()
			t.checkCPUs()
			t.reclaimRuns()
			t.syncClock() // follow NTP adjustments of the wall clock
		}
		if time.Since(lastSweep) >= fillSweepInterval {
			lastSweep = time.Now()
			t.sweepFills(lastSweep)
		}
	}
}

func (t *Tracer) handle(raw []byte) {
	ev, err := decodeEvent(raw)
	if err != nil {
		t.badRecords.Add(1)
		return
	}
	ev.Time = time.Unix(0, int64(ev.MonoNS)+t.monoOff.Load())
	if ev.Kind == KindExit {
		// Off the reader: forgetting 64 k blocks takes a while, and the
		// ring must keep draining meanwhile.
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.exited(ev.TGID)
		}()
	}
	select {
	case t.events <- ev:
		t.delivered.Add(1)
	default:
		t.userDrops.Add(1)
	}
}

// fillSweepInterval is how often stored fills are checked for age.
const fillSweepInterval = 30 * time.Second

// exited forgets a TGID the kernel (or the liveness check) saw exit.
func (t *Tracer) exited(tgid uint32) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	if t.procs[tgid] == nil {
		// Traced by its first fill only (fill_begin): what it stored and
		// no claim took goes with it.
		if err := t.dropFillsLocked(tgid, time.Time{}); err != nil {
			t.log.Warn("drop fills of exited process", "pid", tgid, "error", err)
		}
		t.mu.Unlock()
		return
	}
	rep, err := t.forgetLocked(tgid)
	t.mu.Unlock()
	if err != nil {
		t.log.Warn("clean up exited process", "pid", tgid, "error", err)
	}
	if t.cfg.OnExit != nil {
		t.cfg.OnExit(rep)
	}
}

// checkLiveness polls each tracked process's pidfd, which is readable once
// the process has exited: the backstop for exit notices lost to a full ring.
func (t *Tracer) checkLiveness() {
	t.mu.Lock()
	fds := make([]unix.PollFd, 0, len(t.procs))
	tgids := make([]uint32, 0, len(t.procs))
	for tgid, p := range t.procs {
		fds = append(fds, unix.PollFd{Fd: int32(p.pidfd), Events: unix.POLLIN})
		tgids = append(tgids, tgid)
	}
	t.mu.Unlock()
	if len(fds) == 0 {
		return
	}
	if n, err := unix.Poll(fds, 0); err != nil || n == 0 {
		return
	}
	var dead []uint32
	for i, fd := range fds {
		if fd.Revents != 0 {
			dead = append(dead, tgids[i])
		}
	}
	for _, tgid := range dead {
		t.exited(tgid)
	}
}

// syncClock records wall time minus CLOCK_MONOTONIC (bpf_ktime_get_ns), to
// stamp events with wall-clock times.
func (t *Tracer) syncClock() error {
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return fmt.Errorf("read monotonic clock: %w", err)
	}
	t.monoOff.Store(time.Now().UnixNano() - mono.Nano())
	return nil
}
