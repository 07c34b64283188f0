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
	got := strings.TrimSpace(strata(t, "hook-opts", "--dir", dir, "--hook-socket", "/run/x/hook.sock"))
	want := "-agentpath:" + dir + "/libstratahook.so=jar=" + dir + "/strata-hook.jar,socket=/run/x/hook.sock"
	if got != want {
		t.Errorf("hook-opts =\n%s\nwant\n%s", got, want)
	}
	// --socket, the old name, says the same and warns.
	old, warn, code := call("hook-opts", "--dir", dir, "--socket", "/run/x/hook.sock")
	if strings.TrimSpace(old) != want || code != 0 || !strings.Contains(warn, "--socket is deprecated: use --hook-socket") {
		t.Errorf("hook-opts --socket: exit %d, stdout %q, stderr %q", code, old, warn)
	}
	t.Setenv(hookDirEnv, dir)
	if got := strings.TrimSpace(strata(t, "hook-opts")); !strings.HasPrefix(got, "-agentpath:"+dir+"/") || strings.Contains(got, "socket=") {
		t.Errorf("hook-opts from $%s = %q", hookDirEnv, got)
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
	got := strings.TrimSpace(strata(t, "hook-opts", "--ship", "--dir", dir, "--hook-socket", "/run/x/hook.sock"))
	want := "--conf spark.yarn.dist.files=" + dir + "/strata-hook.jar," + dir + "/libstratahook.so " +
		"--conf spark.executor.defaultJavaOptions=-agentpath:./libstratahook.so=jar=./strata-hook.jar,socket=/run/x/hook.sock"
	if got != want {
		t.Errorf("hook-opts --ship =\n%s\nwant\n%s", got, want)
	}
	nowhere := filepath.Join(t.TempDir(), "not-here")
	if got := strings.TrimSpace(strata(t, "hook-opts", "--remote", "--dir", nowhere)); got != "-agentpath:"+nowhere+"/libstratahook.so=jar="+nowhere+"/strata-hook.jar" {
		t.Errorf("hook-opts --remote = %q", got)
	}
	if got := strings.TrimSpace(strata(t, "hook-opts", "--remote")); got != "-agentpath:/opt/strata/jvmhook/libstratahook.so=jar=/opt/strata/jvmhook/strata-hook.jar" {
		t.Errorf("hook-opts --remote (default folder) = %q", got)
	}
	for _, args := range [][]string{{"--remote", "--ship"}, {"--remote", "--dir", "relative"}} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append([]string{"hook-opts"}, args...), &out, &errOut); exitStatus(err, io.Discard) != 2 {
			t.Errorf("hook-opts %v: %v (exit %d), want a usage error", args, err, exitStatus(err, io.Discard))
		}
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"hook-opts", "--ship", "--dir", nowhere}, &out, &errOut); err == nil {
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
		"missing files": {"--dir", empty},
		"space in path": {"--dir", spaced},
		"comma socket":  {"--dir", spaced, "--hook-socket", "/a,b"},
		"extra arg":     {"--dir", empty, "x"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(context.Background(), append([]string{"hook-opts"}, args...), &out, &errOut); err == nil {
				t.Errorf("hook-opts %v printed %q, want an error", args, out.String())
			}
		})
	}
}
