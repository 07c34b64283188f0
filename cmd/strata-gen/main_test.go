package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/fetcher"
	"github.com/stratatrace/strata/collector/job"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-out", dir, "-jobs", "2", "-maps", "3"}, &out); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"-out", dir, "-kind", "spark", "-tasks", "5"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"lz4", "snappy", "zstd"} {
		if err := run(context.Background(), []string{"-out", filepath.Join(dir, c), "-kind", "spark", "-tasks", "5", "-codec", c}, &out); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Fields(out.String())
	if len(lines) != 6 || filepath.Base(lines[2]) != "application_1700000000000_0001" || filepath.Base(lines[3]) != "application_1700000000000_0001.lz4" {
		t.Errorf("wrote %q", lines)
	}
	// Every file reads back as one job.
	n := 0
	if err := fetcher.Fetch(context.Background(), dir, func(*job.Job) error { n++; return nil }); err != nil || n != 6 {
		t.Errorf("fetched %d jobs: %v", n, err)
	}
	if err := run(context.Background(), []string{"-kind", "mr"}, &out); err == nil {
		t.Error("missing -out accepted")
	}
}

// TestRefusesBadArguments: every argument that cannot make a job is refused
// as a usage error, naming the flag, before anything is written.
func TestRefusesBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"-jobs", "-3"}, {"-jobs", "0"}, {"-maps", "0"}, {"-reduces", "-1"}, {"-kind", "pig"},
		{"-kind", "spark", "-tasks", "0"}, {"-kind", "spark", "-stages", "0"}, {"-skew", "-2"}, {"-gc", "-0.5"},
		{"-container-mb", "-1"}, {"-codec", "lz4"}, {"-kind", "spark", "-codec", "gzip"}, {"stray"}, {"-jobs", "x"},
	} {
		out := filepath.Join(dir, "x")
		err := run(context.Background(), append([]string{"-out", out}, args...), io.Discard)
		named := args[0]
		if named == "stray" {
			named = "unexpected"
		} else if args[0] == "-kind" && len(args) > 2 {
			named = args[2]
		}
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), named) {
			t.Errorf("%v: %v, want a usage error naming %s", args, err, named)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%v: wrote %s before refusing", args, out)
		}
	}
}

// TestHelpAndVersion: -h prints the synopsis and every flag with its
// placeholder to stdout and is no error; --version prints the version;
// refused arguments exit 2 with the reason on stderr, -h exits 0.
func TestHelpAndVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out); err != nil {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"usage: strata-gen -out DIR", "-out DIR", "-jobs N", "-kind KIND", "-codec CODEC", "-skew FACTOR"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"--version"}, &out); err != nil || !strings.HasPrefix(out.String(), "strata-gen dev go") {
		t.Errorf("--version: %v, %q", err, out.String())
	}
	var stderr bytes.Buffer
	if code := exitStatus(run(context.Background(), []string{"-jobs", "-3", "-out", t.TempDir()}, io.Discard), &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "-jobs -3") || !strings.Contains(stderr.String(), "strata-gen -h") {
		t.Errorf("-jobs -3: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := exitStatus(run(context.Background(), []string{"-nope"}, io.Discard), &stderr); code != 2 ||
		strings.Count(stderr.String(), "-nope") != 1 {
		t.Errorf("-nope: exit %d, stderr %q", code, stderr.String())
	}
	if code := exitStatus(run(context.Background(), []string{"-h"}, io.Discard), &stderr); code != 0 {
		t.Errorf("-h: exit %d", code)
	}
}
