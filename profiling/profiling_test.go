package profiling

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// No address, no profiler: Start returns nil and nothing reaches a server.
// With an address, a real HTTP server receives profile uploads of the
// application, tagged, within a few upload periods.
func TestStartOnlyWithAddress(t *testing.T) {
	var uploads atomic.Int64
	var app atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ingest" {
			app.Store(r.URL.Query().Get("name"))
			uploads.Add(1)
		}
	}))
	defer srv.Close()

	p, err := Start(Config{Server: "", App: "strata-test", UploadRate: 50 * time.Millisecond})
	if err != nil || p != nil {
		t.Fatalf("Start without an address = %v, %v; want nil, nil", p, err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop of a nil profiler: %v", err)
	}

	p, err = Start(Config{Server: srv.URL, App: "strata-test", Tags: map[string]string{"node": "n1"}, UploadRate: 100 * time.Millisecond})
	if err != nil || p == nil {
		t.Fatalf("Start = %v, %v", p, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for uploads.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if uploads.Load() == 0 {
		t.Fatal("no profile reached the server in 20s")
	}
	if got, _ := app.Load().(string); !strings.HasPrefix(got, "strata-test{") || !strings.Contains(got, "node=n1") {
		t.Fatalf("upload named %q", got)
	}
}
