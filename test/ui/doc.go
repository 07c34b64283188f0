// Package ui tests the collector's web UI in a real browser: Debian's
// Chromium, headless, driven over the DevTools protocol (chromedp), against
// a strata-collector started by the test with --http, fed real traces (the
// C workload through the real agent) and analysed job histories (test/gen).
// Each page must load without a console error and show the stored
// numbers; screenshots of the main pages go to $STRATA_UI_OUT (default
// bin/ui-test). The tests skip, saying why, without root (the agent's PFNs)
// or without chromium (make deps installs it).
package ui
