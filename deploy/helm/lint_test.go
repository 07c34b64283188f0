package helm

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"

	"github.com/stratatrace/strata/test/testenv"
)

// lintChart runs Helm's linter (what `helm lint --strict --namespace
// strata` runs) on the chart with values over its defaults, for the
// Kubernetes version of the API types this module builds against, and
// returns the messages that fail a strict lint: warnings and errors.
func lintChart(t *testing.T, values map[string]any) []support.Message {
	t.Helper()
	kube, err := chartutil.ParseKubeVersion(kubeVersion(t))
	if err != nil {
		t.Fatal(err)
	}
	linter := lint.AllWithKubeVersion("strata", values, "strata", kube)
	var failed []support.Message
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			failed = append(failed, m)
		} else {
			t.Logf("lint: %s", m)
		}
	}
	return failed
}

// kubeVersion is the Kubernetes release of the k8s.io/api module go.mod
// requires (v0.X.Y is Kubernetes v1.X.Y): the newest API the chart's
// objects are decoded against.
func kubeVersion(t *testing.T) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.([0-9]+\.[0-9]+)\s`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api")
	}
	return "v1." + string(m[1])
}

// The chart passes Helm's linter in strict mode (no warning, no error)
// with its defaults, with every optional part on (testdata/all-on.yaml)
// and with that on the ClickHouse store; each of those also renders and
// decodes strictly. The linter does check the values: a wrong one fails.
func TestLint(t *testing.T) {
	allOn, err := os.ReadFile("testdata/all-on.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const clickhouse = `
collector:
  store: clickhouse
  replicas: 3
  clickhouse:
    url: https://clickhouse.example.com:8443
    database: traces
    user: strata_writer
    passwordSecret: {name: clickhouse-password, key: pw}
    cluster: strata_cluster
    createSchema: false
`
	for _, tc := range []struct {
		name   string
		values []string // YAML, later ones over earlier ones
	}{
		{"defaults", nil},
		{"all-on", []string{string(allOn)}},
		{"all-on-clickhouse", []string{string(allOn), clickhouse}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := map[string]any{}
			for _, v := range tc.values {
				var m map[string]any
				if err := yaml.Unmarshal([]byte(v), &m); err != nil {
					t.Fatal(err)
				}
				vals = chartutil.CoalesceTables(m, vals)
			}
			for _, m := range lintChart(t, vals) {
				t.Errorf("helm lint --strict: %s", m)
			}
			// The linter ignores the chart's own checks (fail); rendering
			// does not.
			merged, err := yaml.Marshal(vals)
			if err != nil {
				t.Fatal(err)
			}
			o := mustRender(t, string(merged))
			if tc.name != "defaults" && (len(o.monitoring) != 3 || len(o.pdbs) != 1 || len(o.ingresses) != 1 || len(o.policies) != 2) {
				t.Errorf("optional objects: monitoring %v, PDBs %v, ingresses %v, policies %v",
					keys(o.monitoring), keys(o.pdbs), keys(o.ingresses), keys(o.policies))
			}
		})
	}

	// A value the schema refuses is a lint error, so the lint above sees
	// the values it is given.
	failed := lintChart(t, map[string]any{"collector": map[string]any{"grpcPort": "7070"}})
	if !slices.ContainsFunc(failed, func(m support.Message) bool {
		return m.Severity == support.ErrorSev && strings.Contains(m.Error(), "at '/collector/grpcPort'")
	}) {
		t.Errorf("lint of a string port: %v; want an error naming /collector/grpcPort", failed)
	}
}
