package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stratatrace/strata/test/testenv"
)

var (
	fence   = regexp.MustCompile("(?s)```.*?```")
	code    = regexp.MustCompile("`[^`\n]*`")
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
	// fenceLine is a line that opens or closes a fenced code block.
	fenceLine = regexp.MustCompile("(?m)^\\s*```")
	nonSlug   = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// TestMarkdownLinks: every relative link of every Markdown file in the
// repository (outside .deps, bin and node_modules) resolves to a file in
// the repository, and its anchor, if any, to a heading there; every code
// fence is closed.
func TestMarkdownLinks(t *testing.T) {
	root := testenv.RepoRoot()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".deps", "bin", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if n := len(fenceLine.FindAllIndex(b, -1)); n%2 != 0 {
			t.Errorf("%s: %d code fence lines: one is not closed, and the rest of the page renders as code", rel, n)
		}
		text := code.ReplaceAllString(fence.ReplaceAllString(string(b), ""), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
			}
			if r, err := filepath.Rel(root, dest); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s: link %s leaves the repository", rel, target)
				continue
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: %v", rel, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[frag] {
				t.Errorf("%s: link %s: no heading %q there", rel, target, frag)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Errorf("only %d links checked: the walk missed the docs", checked)
	}
	t.Logf("%d relative links checked", checked)
}

// anchors are the GitHub anchors of a Markdown file's headings: lower
// case, punctuation dropped, spaces as hyphens, repeats numbered -1, -2.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		h := strings.ReplaceAll(m[1], "`", "")
		s := strings.ReplaceAll(nonSlug.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}
