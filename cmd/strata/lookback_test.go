package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/store/storetest"
)

// Looking back at an ended application (storetest.MomentApp, every block
// freed by its end): `strata trace --at` and the API's at= show the pages
// of the blocks live at that moment and say which moment; the memory
// map's default is the app's peak, and says so.
func TestLookingBack(t *testing.T) {
	c := apiCollector(t)
	app := url.PathEscape(storetest.MomentApp)
	type page struct {
		Block string `json:"block_id"`
		PFN   uint64 `json:"pfn"`
	}
	pfns := func(pages []page) map[uint64]string {
		out := map[uint64]string{}
		for _, p := range pages {
			out[p.PFN] = p.Block
		}
		return out
	}
	for _, tc := range []struct {
		at    string
		dt    int64 // the moment, after T0
		words string
	}{
		{"+5s", 5e9, "2023-11-14 22:13:25.000 UTC (+5s): its RDDs held 24.0 KiB (at most 56.0 KiB, at +2s); the application has ended"},
		{"2023-11-14T22:13:23.5Z", 35e8, "2023-11-14 22:13:23.500 UTC (+3.5s): its RDDs held 56.0 KiB (at most 56.0 KiB, at +2s); the application has ended"},
		{"peak", 2e9, "the moment its RDDs held the most: 2023-11-14 22:13:22.000 UTC (+2s), 56.0 KiB; the application has ended"},
	} {
		var out, errOut bytes.Buffer
		args := []string{"trace", "--collector", c.Addr, "-o", "json", "--app", storetest.MomentApp, "--at", tc.at}
		if err := run(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("strata %s: %v (%s)", strings.Join(args, " "), err, errOut.String())
		}
		if got, want := errOut.String(), "strata trace: showing "+tc.words+"\n"; got != want {
			t.Errorf("--at %s: stderr %q, want %q", tc.at, got, want)
		}
		if got, want := pfns(jsonLines[page](t, out.String())), storetest.MomentPFNs(tc.dt); !reflect.DeepEqual(got, want) {
			t.Errorf("--at %s: pages %v, want %v", tc.at, got, want)
		}
		resp, err := http.Get("http://" + c.HTTPAddr + "/api/v1/apps/" + app + "/trace?at=" + url.QueryEscape(tc.at))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Strata-Moment"); resp.StatusCode != http.StatusOK || got != tc.words {
			t.Errorf("trace?at=%s: %s, Strata-Moment %q, want %q", tc.at, resp.Status, got, tc.words)
		}
	}

	// The map of the ended app: by default its peak, saying so; now, empty.
	type memMap struct {
		Pages  uint64 `json:"pages"`
		Moment struct {
			At      string `json:"at"`
			Kind    string `json:"kind"`
			Default bool   `json:"default"`
			Says    string `json:"says"`
			Ended   bool   `json:"ended"`
			Bytes   uint64 `json:"bytes"`
		} `json:"moment"`
	}
	var m memMap
	if err := json.Unmarshal(apiGet(t, c, "/apps/"+app+"/memmap"), &m); err != nil {
		t.Fatal(err)
	}
	if m.Pages != 14 || m.Moment.Kind != "peak" || !m.Moment.Default || !m.Moment.Ended || m.Moment.At != "2023-11-14T22:13:22Z" ||
		m.Moment.Bytes != 14*storetest.PageSize ||
		m.Moment.Says != "the moment its RDDs held the most: 2023-11-14 22:13:22.000 UTC (+2s), 56.0 KiB; the application has ended" {
		t.Errorf("default map: %+v", m)
	}
	m = memMap{}
	if err := json.Unmarshal(apiGet(t, c, "/apps/"+app+"/memmap?at=now"), &m); err != nil {
		t.Fatal(err)
	}
	if m.Pages != 0 || m.Moment.Kind != "now" || m.Moment.Default || m.Moment.At != "" {
		t.Errorf("map now: %+v", m)
	}

	// strata numa at the peak: the 14 pages on node 0, and which moment.
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"numa", "--collector", c.Addr, "--app", storetest.MomentApp, "--at", "peak"},
		&out, &errOut); err != nil {
		t.Fatal(err)
	}
	if want := "RDD  NODE  PAGES  BYTES\n1    0     6      24576\n2    0     8      32768\n"; out.String() != want {
		t.Errorf("numa --at peak:\n%s\nwant\n%s", out.String(), want)
	}
	if want := "strata numa: showing the moment its RDDs held the most: 2023-11-14 22:13:22.000 UTC (+2s), 56.0 KiB; " +
		"the application has ended\n"; errOut.String() != want {
		t.Errorf("numa --at peak: stderr %q, want %q", errOut.String(), want)
	}

	// A moment the CLI cannot read is refused before asking.
	out.Reset()
	errOut.Reset()
	err := run(context.Background(), []string{"trace", "--collector", c.Addr, "--app", storetest.MomentApp, "--at", "yesterday"}, &out, &errOut)
	if !errors.Is(err, errUsage) || !strings.Contains(errOut.String(), `at "yesterday"`) {
		t.Errorf("--at yesterday: %v, stderr %q", err, errOut.String())
	}
}
