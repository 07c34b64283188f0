package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// TestMutualTLS runs the real binaries with certificates from `strata
// certs`: a collector requiring client certificates, an agent with a
// valid one, and three agents without (no certificate, another CA's,
// plain TCP). All four take their workload's records; only the first
// gets them stored, the others keep theirs spooled and reconnect. A user
// reads the stored pages with the client certificate; without it the CLI
// is refused; the collector's /metrics takes the same certificate.
func TestMutualTLS(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	wbin := workload.Build(t)
	pki, foreign := filepath.Join(t.TempDir(), "pki"), filepath.Join(t.TempDir(), "foreign")
	runCLI(t, bin, "certs", "init", "--dir", pki)
	runCLI(t, bin, "certs", "init", "--dir", foreign)
	b, other := authn.Bundle{Dir: pki}, authn.Bundle{Dir: foreign}
	col := b.Files(authn.RoleCollector)
	httpAddr := freePort(t)
	c, addr := startCollectorWith(t, bin, "--tls-cert", col.Cert, "--tls-key", col.Key, "--tls-client-ca", b.CA(), "--http", httpAddr)

	ag, fa := b.Files(authn.RoleAgent), other.Files(authn.RoleAgent)
	agents := []struct {
		name  string
		flags []string
	}{
		{"valid", []string{"--tls-ca", b.CA(), "--tls-cert", ag.Cert, "--tls-key", ag.Key}},
		{"no-cert", []string{"--tls-ca", b.CA()}},
		{"foreign-ca", []string{"--tls-ca", b.CA(), "--tls-cert", fa.Cert, "--tls-key", fa.Key}},
		{"plain", nil},
	}
	type running struct {
		a   *agentProc
		app string
		w   *workload.Process
	}
	var rs []running
	for _, a := range agents {
		p := startAgent(t, bin, addr, append([]string{"--faults", "off"}, a.flags...)...)
		app := fmt.Sprintf("app-tls-%s-%d", a.name, os.Getpid())
		w := workload.Start(t, wbin, workload.Options{Socket: p.socket, AppID: app, ExecutorID: "1", RDD: 3})
		rs = append(rs, running{p, app, w})
	}
	for _, r := range rs {
		waitFor(t, "records spooled by "+r.app, 30*time.Second, func() bool {
			v, _ := r.a.metric("strata_records_total")
			return v >= 9
		})
	}
	waitFor(t, "the valid agent's records acknowledged", 30*time.Second, func() bool {
		v, _ := rs[0].a.metric("strata_stream_records_acked_total")
		return v >= 9
	})
	time.Sleep(2 * time.Second) // the others have retried by now
	for _, r := range rs[1:] {
		acked, _ := r.a.metric("strata_stream_records_acked_total")
		pending, _ := r.a.metric("strata_spool_pending_batches")
		reconnects, _ := r.a.metric("strata_stream_reconnects_total")
		if acked != 0 || pending == 0 || reconnects == 0 {
			t.Errorf("%s: acked %v, pending %v, reconnects %v; want nothing acked, the batches kept, retries", r.app, acked, pending, reconnects)
		}
	}

	cl := b.Files(authn.RoleClient)
	creds := []string{"--tls-ca", b.CA(), "--tls-cert", cl.Cert, "--tls-key", cl.Key}
	pages := func(app string) int {
		out := runCLI(t, bin, append([]string{"trace", "--collector", addr, "--app", app, "-o", "json"}, creds...)...)
		return strings.Count(out, "\n")
	}
	var want uint64
	for _, r := range rs[0].w.Regions {
		want += 3 * r.Pages // ALLOC, WRITE and READ of every page
	}
	if got := pages(rs[0].app); uint64(got) != want {
		t.Errorf("pages stored for the valid agent: %d, want %d", got, want)
	}
	for _, r := range rs[1:] {
		if got := pages(r.app); got != 0 {
			t.Errorf("%s: %d pages stored from an agent without a valid certificate", r.app, got)
		}
	}
	if out, err := runCLIErr(bin, "trace", "--collector", addr, "--app", rs[0].app, "--tls-ca", b.CA()); err == nil {
		t.Errorf("trace without a client certificate succeeded:\n%s", out)
	}

	tc, err := b.ClientTLS(authn.RoleClient)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tc}}).Get("https://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `strata_collector_ingest_batches_total{result="stored"}`) {
		t.Errorf("collector /metrics with the client certificate: %d\n%.400s", resp.StatusCode, body)
	}
	_, err = (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: tc.RootCAs}}}).Get("https://" + httpAddr + "/metrics")
	if err == nil {
		t.Error("collector /metrics without a certificate: the handshake succeeded")
	}
	for _, r := range rs {
		r.w.Stop()
		r.a.stop(t)
	}
	c.stop(t)
}
