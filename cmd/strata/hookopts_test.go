package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHookOpts(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{hookJar, hookLib} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.TrimSpace(strata(t, "hook-opts", "--install-hook", dir, "--hook-socket", "/run/x/hook.sock"))
	want := "-agentpath:" + dir + "/libstratahook.so=jar=" + dir + "/strata-hook.jar,socket=/run/x/hook.sock"
	if got != want {
		t.Errorf("hook-opts =\n%s\nwant\n%s", got, want)
	}
	// --dir and --socket, the old names, say the same and warn once each;
	// help lists neither.
	old, warn, code := call("hook-opts", "--dir", dir, "--socket", "/run/x/hook.sock")
	if strings.TrimSpace(old) != want || code != 0 || warn != "strata hook-opts: --dir is deprecated: use --install-hook\n"+
		"strata hook-opts: --socket is deprecated: use --hook-socket\n" {
		t.Errorf("hook-opts --dir --socket: exit %d, stdout %q, stderr %q", code, old, warn)
	}
	if help, _, _ := call("hook-opts", "-h"); helpFlags(help)["dir"] != "" || helpFlags(help)["socket"] != "" {
		t.Errorf("hook-opts -h lists a deprecated name:\n%s", help)
	}
	// The agent's variable, then the old one, which warns.
	for _, env := range []string{hookDirEnv, oldHookDirEnv} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, dir)
			got, warn, code := call("hook-opts")
			if got = strings.TrimSpace(got); code != 0 || !strings.HasPrefix(got, "-agentpath:"+dir+"/") || strings.Contains(got, "socket=") {
				t.Errorf("hook-opts from $%s: exit %d, %q", env, code, got)
			}
			if wantWarn := env == oldHookDirEnv; strings.Contains(warn, "$STRATA_HOOK_DIR is deprecated: use $STRATA_HOOK_INSTALL_DIR") != wantWarn {
				t.Errorf("hook-opts from $%s: stderr %q", env, warn)
			}
		})
	}
}

// TestHookOptsShipOnYARNOnly: --ship with a master other than YARN's is a
// usage error that says why; with --master yarn it prints the arguments.
func TestHookOptsShipOnYARNOnly(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{hookJar, hookLib} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"spark://127.0.0.1:7077", "k8s://https://10.0.0.1:6443", "local[2]"} {
		out, errOut, code := call("hook-opts", "--ship", "--master", m, "--install-hook", dir)
		if code != 2 || out != "" || !strings.Contains(errOut, "strata hook-opts: --ship needs --master yarn, not "+m+": only YARN puts shipped files") {
			t.Errorf("hook-opts --ship --master %s: exit %d, stdout %q, stderr %q", m, code, out, errOut)
		}
	}
	if out := strata(t, "hook-opts", "--ship", "--master", "yarn", "--install-hook", dir); !strings.HasPrefix(out, "--conf spark.yarn.dist.files=") {
		t.Errorf("hook-opts --ship --master yarn = %q", out)
	}
}

// TestHookOptsShipAndRemote: --ship prints spark-submit arguments that
// ship this host's files and load them from the container's working
// directory; --remote names the workers' folder without looking for the
// files here.
func TestHookOptsShipAndRemote(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{hookJar, hookLib} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.TrimSpace(strata(t, "hook-opts", "--ship", "--install-hook", dir, "--hook-socket", "/run/x/hook.sock"))
	want := "--conf spark.yarn.dist.files=" + dir + "/strata-hook.jar," + dir + "/libstratahook.so " +
		"--conf spark.executor.defaultJavaOptions=-agentpath:./libstratahook.so=jar=./strata-hook.jar,socket=/run/x/hook.sock"
	if got != want {
		t.Errorf("hook-opts --ship =\n%s\nwant\n%s", got, want)
	}
	nowhere := filepath.Join(t.TempDir(), "not-here")
	if got := strings.TrimSpace(strata(t, "hook-opts", "--remote", "--install-hook", nowhere)); got != "-agentpath:"+nowhere+"/libstratahook.so=jar="+nowhere+"/strata-hook.jar" {
		t.Errorf("hook-opts --remote = %q", got)
	}
	if got := strings.TrimSpace(strata(t, "hook-opts", "--remote")); got != "-agentpath:/opt/strata/jvmhook/libstratahook.so=jar=/opt/strata/jvmhook/strata-hook.jar" {
		t.Errorf("hook-opts --remote (default folder) = %q", got)
	}
	for _, args := range [][]string{{"--remote", "--ship"}, {"--remote", "--install-hook", "relative"}} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append([]string{"hook-opts"}, args...), &out, &errOut); exitStatus(err, io.Discard) != 2 {
			t.Errorf("hook-opts %v: %v (exit %d), want a usage error", args, err, exitStatus(err, io.Discard))
		}
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"hook-opts", "--ship", "--install-hook", nowhere}, &out, &errOut); err == nil {
		t.Errorf("hook-opts --ship without the files printed %q", out.String())
	}
}

func TestHookOptsErrors(t *testing.T) {
	empty := t.TempDir()
	spaced := filepath.Join(t.TempDir(), "a b")
	os.MkdirAll(spaced, 0o755)
	for _, f := range []string{hookJar, hookLib} {
		os.WriteFile(filepath.Join(spaced, f), nil, 0o644)
	}
	for name, args := range map[string][]string{
		"missing files": {"--install-hook", empty},
		"space in path": {"--install-hook", spaced},
		"comma socket":  {"--install-hook", spaced, "--hook-socket", "/a,b"},
		"extra arg":     {"--install-hook", empty, "x"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(context.Background(), append([]string{"hook-opts"}, args...), &out, &errOut); err == nil {
				t.Errorf("hook-opts %v printed %q, want an error", args, out.String())
			}
		})
	}
}
