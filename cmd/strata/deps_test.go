package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBuildsWithoutCgo: the user CLI links no store backend, so it builds
// with CGO_ENABLED=0 — `go list -deps` of this package under it names
// neither DuckDB's driver nor collector/store, and no package it lists has
// an error (a package that needs cgo has none of its files left).
func TestBuildsWithoutCgo(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the CLI's packages: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-deps", "-f",
		"{{.ImportPath}}\t{{with .Error}}{{.}}{{end}}{{range .DepsErrors}} {{.}}{{end}}", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const module = "github.com/stratatrace/strata/"
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, problem, _ := strings.Cut(line, "\t")
		listed[path] = true
		if strings.Contains(strings.ToLower(path), "duckdb") || path == module+"collector/store" {
			t.Errorf("strata depends on %s", path)
		}
		if strings.TrimSpace(problem) != "" {
			t.Errorf("%s does not build without cgo: %s", path, problem)
		}
	}
	// The listing is the CLI's: it holds what the commands print with.
	for _, p := range []string{"collector/answer", "collector/query", "collector/query/jsonform", "proto/strata/v1"} {
		if !listed[module+p] {
			t.Errorf("go list -deps does not list %s%s:\n%s", module, p, out)
		}
	}
}
