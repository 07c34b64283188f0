package heuristics

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docsPath is the heuristics reference, relative to this package.
const docsPath = "../../docs/heuristics.md"

// TestDocsCoverRegistry: docs/heuristics.md has a section for every
// registered heuristic (the defaults document links to it by name), and
// every docs/heuristics.md anchor this package's code and comments cite
// is a heading there.
func TestDocsCoverRegistry(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatalf("read the reference: %v", err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,3} (.+)$`).FindAllStringSubmatch(string(doc), -1) {
		anchors[anchor(m[1])] = true
	}
	for _, e := range registry {
		if !anchors[anchor(e.name)] {
			t.Errorf("%s (%s) has no section in %s", e.name, e.key, docsPath)
		}
		if !strings.Contains(string(doc), "`"+e.key+"`") {
			t.Errorf("%s: its key %q is not in %s", e.name, e.key, docsPath)
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	cite := regexp.MustCompile(`docs/heuristics\.md#([a-z0-9_-]+)`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cite.FindAllStringSubmatch(string(src), -1) {
			if !anchors[m[1]] {
				t.Errorf("%s cites docs/heuristics.md#%s, which is no heading", f, m[1])
			}
		}
	}
}

func TestAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"Shuffle & Sort":               "shuffle--sort",
		"Remote-Node Faults":           "remote-node-faults",
		"Fault and Page-Walk Overhead": "fault-and-page-walk-overhead",
		"Severity and score":           "severity-and-score",
	} {
		if got := anchor(in); got != want {
			t.Errorf("anchor(%q) = %q, want %q", in, got, want)
		}
	}
}
