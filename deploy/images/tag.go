package images

import (
	"errors"
	"fmt"
	"regexp"
)

// release matches a release's version, the name of its git tag:
// vMAJOR.MINOR.PATCH (docs/release.md).
var release = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// IsRelease reports whether version names a release (v0.1.0), not a build
// between releases (v0.1.0-3-gabcdef0, abcdef0-dirty, dev).
func IsRelease(version string) bool { return release.MatchString(version) }

// ErrTag: the images' tag and the version of the binaries they hold name
// different releases.
var ErrTag = errors.New("image tag is not the release's version")

// CheckTag refuses images whose tag and version disagree about a release:
// when either the tag (the chart's appVersion) or the version (git
// describe, which the binaries report) is a release, both must be that
// release. Between releases the tag is free ("dev").
func CheckTag(tag, version string) error {
	if (IsRelease(tag) || IsRelease(version)) && tag != version {
		return fmt.Errorf("tag %q, version %q: %w: at a release both are its tag (the chart's appVersion, docs/release.md)", tag, version, ErrTag)
	}
	return nil
}
