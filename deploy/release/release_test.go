package release

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stratatrace/strata/deploy/images"
	"github.com/stratatrace/strata/test/testenv"
)

// makeN returns the commands `make -n target vars...` would run in the
// repository, one per line (continuations joined).
func makeN(t *testing.T, target string, vars ...string) []string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-n", target}, vars...)...)
	cmd.Dir = testenv.RepoRoot()
	for _, e := range os.Environ() {
		// Not the jobserver or variables of a make that runs this test.
		if k, _, _ := strings.Cut(e, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "VERSION" && k != "IMAGE_TAG" {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return strings.Split(strings.ReplaceAll(string(out), "\\\n", " "), "\n")
}

var ldflagsArg = regexp.MustCompile(`-ldflags "([^"]*)"`)

// A build with VERSION=v0.1.0 says v0.1.0: the go build of make build,
// with the -ldflags it gives, makes strata, strata-agent and
// strata-collector whose --version print it; make images gives its go
// builds the same flags and mkimage the version.
func TestBuildEmbedsVersion(t *testing.T) {
	const version = "v0.1.0"
	var ldflags string
	for _, l := range makeN(t, "build", "VERSION="+version) {
		if strings.Contains(l, " build ") && strings.Contains(l, "./cmd/...") {
			if m := ldflagsArg.FindStringSubmatch(l); m != nil {
				ldflags = m[1]
			}
		}
	}
	if ldflags == "" {
		t.Fatal("make -n build: no go build -ldflags of ./cmd/...")
	}
	dir := t.TempDir()
	cmds := []string{"strata", "strata-agent", "strata-collector"}
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", dir+"/")
	for _, c := range cmds {
		build.Args = append(build.Args, "./cmd/"+c)
	}
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	for _, c := range cmds {
		out, err := exec.Command(filepath.Join(dir, c), "--version").Output()
		if err != nil {
			t.Errorf("%s --version: %v", c, err)
			continue
		}
		// "strata-agent v0.1.0 go1.26.1"
		if f := strings.Fields(string(out)); len(f) != 3 || f[0] != c || f[1] != version || !strings.HasPrefix(f[2], "go") {
			t.Errorf("%s --version printed %q, want %q", c, out, c+" "+version+" goVERSION")
		}
	}

	// make images: every go build with these flags, mkimage told the version.
	var builds, mkimage int
	for _, l := range makeN(t, "images", "VERSION="+version, "IMAGE_TAG="+version) {
		if strings.Contains(l, " build ") && strings.Contains(l, "./cmd/") {
			builds++
			if m := ldflagsArg.FindStringSubmatch(l); m == nil || !strings.HasSuffix(m[1], ldflags) {
				t.Errorf("make images builds with other flags than make build's %q:\n%s", ldflags, l)
			}
		}
		if strings.Contains(l, "./deploy/images/mkimage ") {
			mkimage++
			if !strings.Contains(l, " --version "+version+" ") || !strings.Contains(l, " --tag "+version+" ") {
				t.Errorf("make images runs mkimage without --version %s --tag %s:\n%s", version, version, l)
			}
		}
	}
	if builds < 2 || mkimage != 1 {
		t.Errorf("make -n images: %d go builds of ./cmd/, %d mkimage", builds, mkimage)
	}
}

// chart is what Chart.yaml says of versions.
type chart struct {
	Version    string `yaml:"version"`
	AppVersion string `yaml:"appVersion"`
}

// check applies the rule: a release's chart is X.Y.Z with appVersion
// vX.Y.Z; between releases it is X.Y.Z-dev with appVersion dev, so that a
// chart packaged from a commit between releases never takes a release's
// number.
func (c chart) check() error {
	switch {
	case c.AppVersion == "dev":
		if base, ok := strings.CutSuffix(c.Version, "-dev"); !ok || !images.IsRelease("v"+base) {
			return fmt.Errorf("appVersion dev with version %q: want X.Y.Z-dev, the next release's", c.Version)
		}
	case images.IsRelease(c.AppVersion):
		if c.AppVersion != "v"+c.Version {
			return fmt.Errorf("appVersion %s with version %q: want %s", c.AppVersion, c.Version, strings.TrimPrefix(c.AppVersion, "v"))
		}
	default:
		return fmt.Errorf("appVersion %q: want dev or a release's tag vX.Y.Z", c.AppVersion)
	}
	return nil
}

func readChart(t *testing.T) chart {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "deploy/helm/strata/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c chart
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// The chart's versions follow the rule; at a commit a release tag names,
// the chart's appVersion is that tag (so make images tags the images with
// it, and mkimage accepts them).
func TestChartVersion(t *testing.T) {
	c := readChart(t)
	if err := c.check(); err != nil {
		t.Errorf("deploy/helm/strata/Chart.yaml: %v", err)
	}
	for _, tc := range []struct {
		c  chart
		ok bool
	}{
		{chart{"0.1.0", "v0.1.0"}, true},
		{chart{"0.2.0-dev", "dev"}, true},
		{chart{"0.2.0", "dev"}, false},
		{chart{"0.1.0", "v0.2.0"}, false},
		{chart{"0.1.0-dev", "v0.1.0"}, false},
		{chart{"0.1.0", "0.1.0"}, false},
	} {
		if err := tc.c.check(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok %v", tc.c, err, tc.ok)
		}
	}

	cmd := exec.Command("git", "tag", "--points-at", "HEAD", "--list", "v*")
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("skipping the tag check: git tag: %v", err)
	}
	for _, tag := range strings.Fields(string(out)) {
		if images.IsRelease(tag) && c.AppVersion != tag {
			t.Errorf("HEAD is release %s, the chart's appVersion is %q: set version %s, appVersion %s (docs/release.md)",
				tag, c.AppVersion, strings.TrimPrefix(tag, "v"), tag)
		}
	}
}
