package agent

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/annotator"
	"github.com/stratatrace/strata/agent/procmem"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

type memoryLog struct {
	mu    sync.Mutex
	procs []annotator.Process
	got   []*stratav1.ProcessMemory
}

func (m *memoryLog) Processes() []annotator.Process { return m.procs }

func (m *memoryLog) AddMemory(p *stratav1.ProcessMemory) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, p)
}

// The sampler reads the hooked processes' resident memory from the real
// /proc: this test's own process, whose VmRSS it can check, and a pid that
// has exited, which is skipped.
func TestSampleMemory(t *testing.T) {
	pid := uint32(os.Getpid())
	sink := &memoryLog{procs: []annotator.Process{{PID: pid, AppID: "app-1", ExecutorID: "2"}, {PID: 1 << 30, AppID: "gone"}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		sampleMemory(ctx, procmem.Default(), sink, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		sink.mu.Lock()
		n := len(sink.got)
		sink.mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d samples after 5 s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	st, err := procmem.Default().Status(int(pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sink.got {
		if m.GetPid() != pid || m.GetAppId() != "app-1" || m.GetExecutorId() != "2" || m.GetTimeUnixNano() == 0 {
			t.Errorf("sample %v", m)
		}
		// A sample's peak is at least its own resident set. It need not be
		// at most a later one's: the kernel reports VmHWM as the larger of
		// the recorded peak and the current resident set read from per-CPU
		// counters, which can read a few pages lower a moment later.
		if m.GetRssBytes() == 0 || m.GetHwmBytes() < m.GetRssBytes() ||
			m.GetRssAnonBytes()+m.GetRssFileBytes()+m.GetRssShmemBytes() != m.GetRssBytes() {
			t.Errorf("sample %v (now: hwm %d)", m, st.VmHWM)
		}
	}
}
