package main

import (
	"bytes"
	"context"
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
	got := strings.TrimSpace(strata(t, "hook-opts", "--dir", dir, "--socket", "/run/x/hook.sock"))
	want := "-agentpath:" + dir + "/libstratahook.so=jar=" + dir + "/strata-hook.jar,socket=/run/x/hook.sock"
	if got != want {
		t.Errorf("hook-opts =\n%s\nwant\n%s", got, want)
	}
	t.Setenv(hookDirEnv, dir)
	if got := strings.TrimSpace(strata(t, "hook-opts")); !strings.HasPrefix(got, "-agentpath:"+dir+"/") || strings.Contains(got, "socket=") {
		t.Errorf("hook-opts from $%s = %q", hookDirEnv, got)
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
		"comma socket":  {"--dir", spaced, "--socket", "/a,b"},
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
