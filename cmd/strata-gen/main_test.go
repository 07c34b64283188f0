package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
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
	lines := strings.Fields(out.String())
	if len(lines) != 3 || filepath.Base(lines[2]) != "application_1700000000000_0001" {
		t.Errorf("wrote %q", lines)
	}
	if err := run(context.Background(), []string{"-kind", "mr"}, &out); err == nil {
		t.Error("missing -out accepted")
	}
}
