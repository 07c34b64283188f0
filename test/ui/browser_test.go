package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/stratatrace/strata/test/testenv"
)

// browser is one headless Chromium, driven over the DevTools protocol,
// that records every console error, uncaught exception and failed load.
type browser struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
	shots  string // screenshot folder
}

// newBrowser starts Debian's Chromium with the flags this machine needs
// (no sandbox as root; no background connections, which the closed
// network refuses) and a fresh profile; it is closed at cleanup.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := testenv.Chromium(t)
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser is gone, which fails
	// TempDir's cleanup. Removed here, retrying for a while.
	profile, err := os.MkdirTemp("", "strata-ui-chromium")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		for i := 0; os.RemoveAll(profile) != nil && i < 50; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	b := &browser{ctx: ctx, shots: screenshotDir(t)}
	chromedp.ListenTarget(ctx, func(ev any) {
		var msg string
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				msg = "console." + string(e.Type) + ": " + strings.Join(parts, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "exception: " + e.ExceptionDetails.Error()
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.LevelError {
				msg = "log: " + e.Entry.Text + " " + e.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	})
	if err := chromedp.Run(ctx, cdplog.Enable()); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	return b
}

// screenshotDir is where screenshots go: $STRATA_UI_OUT, else bin/ui-test
// in the repository (ignored by git), made fresh per run.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("STRATA_UI_OUT")
	if dir == "" {
		dir = filepath.Join(testenv.RepoRoot(), "bin", "ui-test")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run runs actions with a deadline.
func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// follow runs actions that navigate (a click on a link, a form's submit)
// and waits for the new page's load, so what is read next is the new
// page's, not the old one's.
func (b *browser) follow(t *testing.T, what string, actions ...chromedp.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b.run(t, what+": wait for the page", chromedp.WaitReady("body", chromedp.ByQuery))
}

// open loads url, waits for its body (and its memory map, if it has one,
// to finish) and fails the test on any console error the load caused.
func (b *browser) open(t *testing.T, url string) {
	t.Helper()
	b.mu.Lock()
	b.errors = nil
	b.mu.Unlock()
	b.run(t, "open "+url, chromedp.Navigate(url), chromedp.WaitReady("body", chromedp.ByQuery))
	b.waitMap(t)
	b.noErrors(t, url)
}

// waitMap waits until every memory map on the page has loaded, and fails
// when one reports an error.
func (b *browser) waitMap(t *testing.T) {
	t.Helper()
	var state string
	b.run(t, "wait for the memory map", chromedp.Poll(`(() => {
		const maps = [...document.querySelectorAll(".memmap")];
		if (maps.some((m) => !m.dataset.state || m.dataset.state === "loading")) return null;
		return maps.map((m) => m.dataset.state).join(",") || "none";
	})()`, &state, chromedp.WithPollingTimeout(30*time.Second)))
	if strings.Contains(state, "error") {
		var msg string
		b.run(t, "read map error", chromedp.Text(".memmap-status", &msg, chromedp.ByQuery))
		t.Fatalf("memory map failed: %s", msg)
	}
}

func (b *browser) noErrors(t *testing.T, where string) {
	t.Helper()
	time.Sleep(50 * time.Millisecond) // let late console events arrive
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		t.Errorf("%s: %s", where, e)
	}
}

// shot writes a full-page PNG screenshot named name.png.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	var png []byte
	b.run(t, "screenshot "+name, chromedp.FullScreenshot(&png, 100))
	p := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// eval evaluates a JavaScript expression into out.
func (b *browser) eval(t *testing.T, expr string, out any) {
	t.Helper()
	b.run(t, "eval "+firstLine(expr), chromedp.Evaluate(expr, out))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// texts returns the trimmed text of every element sel matches.
func (b *browser) texts(t *testing.T, sel string) []string {
	t.Helper()
	var out []string
	b.eval(t, fmt.Sprintf(`[...document.querySelectorAll(%q)].map((e) => e.textContent.trim())`, sel), &out)
	return out
}

// legend returns the memory map's legend on the open page: colour by RDD.
func (b *browser) legend(t *testing.T) map[string]string {
	t.Helper()
	legend := map[string]string{}
	b.eval(t, `Object.fromEntries([...document.querySelectorAll(".memmap-legend li")].map((li) => [li.dataset.rdd, li.dataset.color]))`, &legend)
	return legend
}

// mapBucket is one bar of the memory map.
type mapBucket struct {
	RDD  string `json:"rdd"`
	Fill string `json:"fill"`
}

// bucketAt opens an app's memory map (appPage: its UI address) zoomed to
// the 16 PFNs from pfn and returns the bar that starts at pfn (zero if
// there is none).
func (b *browser) bucketAt(t *testing.T, appPage string, pfn uint64) mapBucket {
	t.Helper()
	b.open(t, fmt.Sprintf("%s/memory?from=%d&to=%d", appPage, pfn, pfn+16))
	var got mapBucket
	b.eval(t, fmt.Sprintf(`(() => { const r = document.querySelector('rect.bucket[data-start="%d"]'); return r ? {rdd: r.dataset.rdd, fill: r.getAttribute("fill")} : {}; })()`, pfn), &got)
	return got
}
