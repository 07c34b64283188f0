package hooksrv

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// offCount is strata_hook_jvms_off_total{reason} as a scrape of the
// server's collector reads it.
func offCount(t *testing.T, s *Server, reason OffReason) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(s))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "strata_hook_jvms_off_total" {
			continue
		}
		if len(mf.GetMetric()) != int(offReasonMax) {
			t.Errorf("strata_hook_jvms_off_total has %d series, want one per reason (%d)", len(mf.GetMetric()), offReasonMax)
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason.String() {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no strata_hook_jvms_off_total{reason=%q} in the scrape", reason)
	return 0
}

// TestServerOff: a connection whose only frame is OFF counts its JVM as off
// by reason (Stats.Off and the metric), logs the JVM's pid, reason, Java
// version and detail on one line, yields no event and is closed. An OFF
// naming another process is rejected and not counted; an OFF after HELLO
// ends that session as malformed.
func TestServerOff(t *testing.T) {
	ts := startServer(t, Config{})
	const detail = "load org.stratatrace.hook.Agent from the jar: java.lang.ClassNotFoundException: org.stratatrace.hook.Agent"
	p := dial(t, ts.Path())
	p.send(&Off{PID: me, Reason: OffJar, Java: 21, Detail: detail})
	p.waitClosed()
	waitUntil(t, "the OFF connection gone", func() bool { return ts.Stats().Active == 0 })

	var want [offReasonMax + 1]uint64
	want[OffJar] = 1
	if st := ts.Stats(); st.Off != want || st.Frames != 1 || st.Malformed != 0 || st.Rejected != 0 || st.Sessions != 1 {
		t.Errorf("stats = %+v, want one JVM off for its jar, one frame, nothing refused", st)
	}
	if got := offCount(t, ts.Server, OffJar); got != 1 {
		t.Errorf("strata_hook_jvms_off_total{reason=jar} = %v, want 1", got)
	}
	if got := offCount(t, ts.Server, OffJavaVersion); got != 0 {
		t.Errorf("strata_hook_jvms_off_total{reason=java_version} = %v, want 0", got)
	}
	var lines []string
	for _, l := range strings.Split(ts.logs.String(), "\n") {
		if strings.Contains(l, `msg="JVM hook off"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("log has %d lines about the JVM off, want 1:\n%s", len(lines), ts.logs)
	}
	for _, w := range []string{"level=WARN", fmt.Sprintf("peer_pid=%d ", me), fmt.Sprintf("pid=%d ", me),
		"reason=jar", "java=21", fmt.Sprintf("detail=%q", detail)} {
		if !strings.Contains(lines[0], w) {
			t.Errorf("log line %q lacks %q", lines[0], w)
		}
	}
	ts.rec.mu.Lock()
	if len(ts.rec.evs) != 0 {
		t.Errorf("events from an OFF connection: %+v", ts.rec.evs)
	}
	ts.rec.mu.Unlock()

	// Another process's OFF: rejected as a foreign HELLO is.
	q := dial(t, ts.Path())
	q.send(&Off{PID: uint32(os.Getppid()), Reason: OffJavaVersion, Java: 8})
	q.waitClosed()
	waitUntil(t, "the foreign OFF connection gone", func() bool { return ts.Stats().Active == 0 })
	if st := ts.Stats(); st.Off != want || st.Rejected != 1 {
		t.Errorf("after a foreign OFF: stats = %+v, want it rejected and not counted", st)
	}

	// OFF inside a session: malformed.
	r := dial(t, ts.Path())
	r.send(hello("app-off"))
	r.send(&Off{PID: me, Reason: OffOptions})
	r.waitClosed()
	waitUntil(t, "the session's end", func() bool { return len(ts.rec.of("app-off")) == 2 })
	if st := ts.Stats(); st.Off != want || st.Malformed != 1 {
		t.Errorf("after OFF in a session: stats = %+v, want one malformed session and no JVM counted", st)
	}
	if evs := ts.rec.of("app-off"); evs[1].Kind != EventSessionEnd || !errors.Is(evs[1].Err, ErrOffInSession) {
		t.Errorf("session end %+v, want one ended by %v", evs[1], ErrOffInSession)
	}
}
