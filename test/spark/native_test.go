package spark

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// TestHookExports: libstratahook.so exports the JVMTI and JNI entry points
// and the natives of org.stratatrace.hook.Native, nothing else (it is built
// with -fvisibility=hidden; frame.c and the registry's files (blocks.c, sendq.c, rescan.c, walks.c) stay internal).
func TestHookExports(t *testing.T) {
	lib := testenv.Built(t, "jvmhook/libstratahook.so")
	nm, err := exec.LookPath("nm")
	if err != nil {
		t.Skipf("skipping: nm not found: %v", err)
	}
	out, err := exec.Command(nm, "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatalf("nm: %v", err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		got = append(got, f[len(f)-1])
	}
	want := map[string]bool{"Agent_OnLoad": true, "Agent_OnUnload": true, "JNI_OnLoad": true}
	src, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "jvmhook/java/src/main/java/org/stratatrace/hook/Native.java"))
	if err != nil {
		t.Fatal(err)
	}
	natives := regexp.MustCompile(`static native [\w\[\]]+ (\w+)\(`).FindAllStringSubmatch(string(src), -1)
	if len(natives) < 10 {
		t.Fatalf("Native.java declares %d natives", len(natives))
	}
	for _, n := range natives {
		want["Java_org_stratatrace_hook_Native_"+n[1]] = true
	}
	for _, s := range got {
		if !want[s] {
			t.Errorf("libstratahook.so exports %s", s)
		}
		delete(want, s)
	}
	for s := range want {
		t.Errorf("libstratahook.so does not export %s", s)
	}
}

// TestHookWireConstants: the Java agent's copy of the wire constants equals
// what the C compiler says about jvmhook/include/strata_hook.h.
func TestHookWireConstants(t *testing.T) {
	testenv.RequireJava(t)
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	gen := workload.Compile(t, "golden", "agent/hooksrv/testdata/cgen/golden.c")
	cOut, err := exec.Command(gen, "layout").Output()
	if err != nil {
		t.Fatalf("golden layout: %v", err)
	}
	c := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^const (\S+) (\S+)$`).FindAllStringSubmatch(string(cOut), -1) {
		c[m[1]] = m[2]
	}
	jOut, err := exec.Command("java", "-cp", filepath.Clean(jar), "org.stratatrace.hook.Wire").Output()
	if err != nil {
		t.Fatalf("java Wire: %v", err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^const (\S+) (\S+)$`).FindAllStringSubmatch(string(jOut), -1) {
		n++
		if cv, ok := c[m[1]]; !ok || cv != m[2] {
			t.Errorf("Java %s = %s, C %q (known %v)", m[1], m[2], cv, ok)
		}
	}
	if n < 20 {
		t.Errorf("Java printed %d constants:\n%s", n, jOut)
	}
}
