package spark

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratatrace/strata/test/testenv"
)

// TestHookStartup starts a bare JVM (java -version) with the hook as the
// one -agentpath option `strata hook-opts` prints, and with options that
// keep it off: the JVM always runs to its end, and the hook says on one
// line whether it is on or why not. The hook is on in the default java
// (17) and in every other runtime installed (Java 11 and 21).
func TestHookStartup(t *testing.T) {
	testenv.RequireJava(t)
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	lib := filepath.Join(filepath.Dir(jar), "libstratahook.so")
	socket := filepath.Join(t.TempDir(), "nobody.sock")
	for _, c := range []struct {
		name, opts string
		want       []string
	}{
		{"on", "jar=" + jar + ",socket=" + socket, []string{
			"strata-hook: on (",
			"strata-hook: sent=0 dropped=0 live=0 gcs=0 moves=0 collected=0 connects=0 errors=0",
		}},
		{"no jar", "socket=" + socket, []string{"strata-hook: off: no jar= in the agent's options"}},
		{"missing jar", "jar=" + filepath.Join(t.TempDir(), "none.jar"), []string{
			"strata-hook: off: load org.stratatrace.hook.Agent from the jar: java.lang.ClassNotFoundException: org.stratatrace.hook.Agent",
		}},
		{"bad option", "jar=" + jar + ",color=red", []string{
			"strata-hook: off: java.lang.IllegalArgumentException: unknown agent option color",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command("java", "-agentpath:"+lib+"="+c.opts, "-version").CombinedOutput()
			if err != nil {
				t.Fatalf("java -version with the hook: %v\n%s", err, out)
			}
			var hook []string
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, "strata-hook:") {
					hook = append(hook, line)
				}
			}
			if len(hook) != len(c.want) {
				t.Fatalf("hook printed %q, want %d lines like %q", hook, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(hook[i], w) {
					t.Errorf("line %d = %q, want %q", i, hook[i], w)
				}
			}
		})
	}
	for _, v := range runtimes {
		t.Run("on-java"+v, func(t *testing.T) {
			java := filepath.Join(javaRuntime(t, v), "bin", "java")
			out, err := exec.Command(java, "-agentpath:"+lib+"=jar="+jar+",socket="+socket, "-version").CombinedOutput()
			if err != nil {
				t.Fatalf("java -version with the hook: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), ` version "`+v+`.`) {
				t.Errorf("%s is not Java %s:\n%s", java, v, out)
			}
			checkStartupOn(t, out)
		})
	}
}

// TestHookBootAside: the hook boots on a thread of its own, so a JVM's
// main does not wait for it; a class the weaver wants that loads while the
// boot still runs (MemoryStore, first thing in the probe's main) waits for
// it and is woven all the same. (Whether main started before the boot
// ended depends on the machine; JVMTI agent threads are hidden from Java,
// so the probe cannot tell.)
func TestHookBootAside(t *testing.T) {
	testenv.RequireJava(t)
	home := testenv.SparkHome(t, "3.5")
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	lib := filepath.Join(filepath.Dir(jar), "libstratahook.so")
	job := testenv.Built(t, "sparkjob/sparkjob-3.5.9.jar")
	socket := filepath.Join(t.TempDir(), "nobody.sock")
	for i := 0; i < 3; i++ {
		out, err := exec.Command("java", "-agentpath:"+lib+"=jar="+jar+",socket="+socket,
			"-cp", job+":"+filepath.Join(home, "jars", "*"), "org.stratatrace.sparkjob.StrataBootProbe").CombinedOutput()
		if err != nil {
			t.Fatalf("the probe under the hook: %v\n%s", err, out)
		}
		woven := -1
		for _, line := range strings.Split(string(out), "\n") {
			if _, err := fmt.Sscanf(line, "woven-methods=%d", &woven); err == nil {
				break
			}
		}
		// MemoryStore's woven methods: putBytes, putIteratorAsValues,
		// putIteratorAsBytes, getBytes, getValues, remove, clear and
		// evictBlocksToFreeSpace (Weaver.java).
		if woven != 8 {
			t.Fatalf("run %d: MemoryStore has %d strata$ methods, want 8\n%s", i, woven, out)
		}
	}
}
