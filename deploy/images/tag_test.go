package images

import (
	"errors"
	"testing"
)

// A release's images carry its tag and nothing else does; builds between
// releases take any tag.
func TestCheckTag(t *testing.T) {
	for _, tc := range []struct {
		tag, version string
		ok           bool
	}{
		{"v0.1.0", "v0.1.0", true},
		{"v1.12.3", "v1.12.3", true},
		{"dev", "v0.1.0-3-gabcdef0", true}, // between releases
		{"dev", "abcdef0-dirty", true},     // before the first tag
		{"dev", "dev", true},
		{"nightly", "abcdef0", true},
		{"dev", "v0.1.0", false},               // a release's binaries under another tag
		{"v0.1.0", "v0.1.0-3-gabcdef0", false}, // later binaries under a release's tag
		{"v0.1.0", "v0.1.0-dirty", false},      // uncommitted changes
		{"v0.2.0", "v0.1.0", false},
		{"v0.1.0", "dev", false},
	} {
		err := CheckTag(tc.tag, tc.version)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrTag)) {
			t.Errorf("CheckTag(%q, %q) = %v, want ok %v", tc.tag, tc.version, err, tc.ok)
		}
	}
	for _, v := range []string{"0.1.0", "v0.1", "v01.2.3", "v0.1.0-rc1", "v0.1.0-3-gabcdef0", "dev"} {
		if IsRelease(v) {
			t.Errorf("IsRelease(%q) = true", v)
		}
	}
}
