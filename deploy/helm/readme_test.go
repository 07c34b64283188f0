package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// row is one documented value of values.yaml.
type row struct {
	path, def, doc string
}

// valueRows walks values.yaml: a key whose comment starts "# --" is one
// row (its whole value is the default, children included); other mappings
// are walked into; an undocumented leaf is an error.
func valueRows(src []byte) ([]row, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var rows []row
	var walk func(n *yaml.Node, prefix string) error
	walk = func(n *yaml.Node, prefix string) error {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := prefix + k.Value
			if d, ok := docComment(k.HeadComment); ok {
				var val any
				if err := v.Decode(&val); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				def, err := json.Marshal(val)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				rows = append(rows, row{path, string(def), d})
				continue
			}
			if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
				return fmt.Errorf("%s has no \"# --\" comment", path)
			}
			if err := walk(v, path+"."); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(doc.Content[0], ""); err != nil {
		return nil, err
	}
	return rows, nil
}

// docComment returns the text from the last line of a head comment that
// starts "# -- ", joined into one line.
func docComment(c string) (string, bool) {
	lines := strings.Split(c, "\n")
	start := -1
	for i, l := range lines {
		if l == "# --" || strings.HasPrefix(l, "# -- ") {
			start = i
		}
	}
	if start < 0 {
		return "", false
	}
	var words []string
	for i, l := range lines[start:] {
		l = strings.TrimPrefix(l, "#")
		if i == 0 {
			l = strings.TrimPrefix(l, " --")
		}
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " "), true
}

const (
	tableBegin = "<!-- values table: go test ./deploy/helm -update -->"
	tableEnd   = "<!-- end of values table -->"
)

// valuesTable renders rows as the README's Markdown table.
func valuesTable(rows []row) string {
	var b strings.Builder
	b.WriteString(tableBegin + "\n\n| Key | Default | Description |\n|---|---|---|\n")
	esc := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", r.path, esc.Replace(r.def), esc.Replace(r.doc))
	}
	b.WriteString("\n" + tableEnd)
	return b.String()
}

// The chart's README carries the table of every value, made from
// values.yaml's comments; -update rewrites it.
func TestReadmeValuesTable(t *testing.T) {
	src, err := os.ReadFile("strata/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := valueRows(src)
	if err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	const path = "strata/README.md"
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(readme, []byte(tableBegin)), bytes.Index(readme, []byte(tableEnd))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q", path, tableBegin, tableEnd)
	}
	want := string(readme[:i]) + valuesTable(rows) + string(readme[j+len(tableEnd):])
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		readme = []byte(want)
	}
	if string(readme) != want {
		t.Fatalf("%s's values table is stale: run go test ./deploy/helm -update", path)
	}

	// Every documented value is one the schema knows.
	var schema map[string]any
	b, err := os.ReadFile("strata/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		s := schema
		for k := range strings.SplitSeq(r.path, ".") {
			p, _ := s["properties"].(map[string]any)
			s, _ = p[k].(map[string]any)
			if s == nil {
				t.Errorf("values.schema.json lacks %s", r.path)
				break
			}
		}
	}
}
