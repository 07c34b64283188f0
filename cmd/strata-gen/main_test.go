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
