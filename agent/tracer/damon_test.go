package tracer

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

func writeTree(t *testing.T, files map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	for name, b := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestDAMONStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"no damon", map[string][]byte{"proc/config.gz": gz("CONFIG_DAMON=y\n")}, "unavailable: no DAMON sysfs interface"},
		{"paddr only (this VM)", map[string][]byte{
			"sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds": []byte("0\n"),
			"proc/config.gz": gz("CONFIG_DAMON=y\n# CONFIG_DAMON_VADDR is not set\nCONFIG_DAMON_PADDR=y\n"),
		}, "unavailable: DAMON has physical-address operations only (CONFIG_DAMON_VADDR not set)"},
		{"vaddr", map[string][]byte{
			"sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds": []byte("1\n"),
			"proc/config.gz": gz("CONFIG_DAMON_VADDR=y\nCONFIG_DAMON_PADDR=y\n"),
		}, "available"},
		{"sysfs, config hidden", map[string][]byte{
			"sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds": []byte("0\n"),
		}, "available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			d, err := DAMONStatus(filepath.Join(root, "sys"), filepath.Join(root, "proc"))
			if err != nil {
				t.Fatal(err)
			}
			if d.Status() != tc.want {
				t.Errorf("%+v: %q, want %q", d, d.Status(), tc.want)
			}
		})
	}
	d, err := DAMONStatus("/sys", "/proc")
	if err != nil {
		t.Logf("this node: %v", err) // nr_kdamonds is root-only
		return
	}
	t.Logf("this node: %+v: %s", d, d.Status())
}
