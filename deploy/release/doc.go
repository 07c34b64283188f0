// Package release holds the tests of how a Strata release is cut
// (docs/release.md): one version, vX.Y.Z, the git tag, names the binaries,
// the images and the Helm chart. They check that the Makefile embeds
// VERSION in all three binaries (strata, strata-agent and strata-collector
// built with VERSION=v0.1.0 say v0.1.0 in --version) and passes it to
// make images beside the tag, which is the chart's appVersion; that the
// chart's version and appVersion follow the rule (a release: X.Y.Z and
// vX.Y.Z; between releases: X.Y.Z-dev and dev); and that a commit carrying
// a release tag has that tag as the chart's appVersion.
package release
