// Package ui tests the collector's web UI in a real browser: Debian's
// Chromium, headless, driven over the DevTools protocol (chromedp), against
// a strata-collector started by the test with --http. TestUISpark feeds it
// a real Spark application (the test job in local mode under the JVM hook,
// through the real agent, its event log analysed) and checks the pages
// against Spark's own REST API and the executor's pagemap; TestUI feeds it
// the C workload's blocks and generated job histories (test/gen) to check
// every page, filter and pager against known numbers; TestUISamples opens
// every job of the real histories in $STRATA_SAMPLES.
// Each page must load without a console error and show the stored
// numbers; screenshots of the main pages go to $STRATA_UI_OUT (default
// bin/ui-test). The tests skip, saying why, without root (the agent's PFNs),
// without chromium (make deps installs it) or, for TestUISpark, without
// Spark 3.5 and java.
package ui
