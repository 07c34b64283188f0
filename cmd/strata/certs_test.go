package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// strata certs init and issue write what the collector, agents and the
// CLI then use: a user with the client certificate or the token queries a
// collector that refuses the same command without them.
func TestCertsAndClientCredentials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	out := strata(t, "certs", "init", "--dir", dir, "--hosts", "collector.example,10.1.2.3", "--days", "2")
	if !strings.Contains(out, "--tls-client-ca") {
		t.Errorf("init output does not say how to use the files:\n%s", out)
	}
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	col := readCert(t, filepath.Join(dir, "collector.crt"))
	if !slices.Contains(col.DNSNames, "collector.example") || !slices.Contains(col.DNSNames, "localhost") || len(col.IPAddresses) != 3 {
		t.Errorf("collector SANs %v %v", col.DNSNames, col.IPAddresses)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := col.Verify(x509.VerifyOptions{Roots: pool, DNSName: "collector.example"}); err != nil {
		t.Errorf("collector certificate does not verify for its host: %v", err)
	}
	for _, k := range []string{"ca.key", "collector.key", "agent.key", "client.key", "tokens"} {
		if st, err := os.Stat(filepath.Join(dir, k)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v (%v), want 0600", k, st.Mode(), err)
		}
	}
	var errOut bytes.Buffer
	if err := run(context.Background(), []string{"certs", "init", "--dir", dir}, &bytes.Buffer{}, &errOut); err == nil {
		t.Error("a second init over an existing CA succeeded")
	}
	issued := t.TempDir()
	strata(t, "certs", "issue", "--dir", dir, "--role", "agent", "--name", "node-7", "--out", issued)
	ag := readCert(t, filepath.Join(issued, "node-7.crt"))
	if ag.Subject.CommonName != "node-7" || !slices.Equal(ag.Subject.OrganizationalUnit, []string{"agent"}) {
		t.Errorf("issued %v", ag.Subject)
	}
	if _, err := ag.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("issued agent certificate: %v", err)
	}
	if err := run(context.Background(), []string{"certs", "issue", "--dir", dir, "--role", "root", "--name", "x"}, &bytes.Buffer{}, &errOut); err == nil {
		t.Error("issued a certificate of an unknown role")
	}
	if tok := strata(t, "certs", "token"); len(strings.TrimSpace(tok)) != 64 {
		t.Errorf("token %q", tok)
	}

	b := authn.Bundle{Dir: dir}
	c := servertest.StartWith(t, []*stratav1.Batch{storetest.Sample(1)}, storetest.Jobs(), func(cfg *server.Config) {
		f := b.Files(authn.RoleCollector)
		cfg.Insecure, cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA, cfg.TokenFile = false, f.Cert, f.Key, f.CA, b.TokenFile()
	})
	cl := b.Files(authn.RoleClient)
	jobs := []string{"jobs", "--collector", c.Addr, "--tls-ca", b.CA()}
	want := strata(t, append(jobs, "--tls-cert", cl.Cert, "--tls-key", cl.Key)...)
	if !strings.Contains(want, "job_") {
		t.Fatalf("jobs with a client certificate:\n%s", want)
	}
	if got := strata(t, append(jobs, "--token-file", b.TokenFile())...); got != want {
		t.Errorf("jobs with a token:\n%s\nwant\n%s", got, want)
	}
	tok, _ := os.ReadFile(b.TokenFile())
	t.Setenv("STRATA_TOKEN", strings.TrimSpace(string(tok)))
	t.Setenv("STRATA_TLS_CA", b.CA())
	if got := strata(t, "jobs", "--collector", c.Addr); got != want {
		t.Errorf("jobs with $STRATA_TOKEN and $STRATA_TLS_CA:\n%s", got)
	}
	t.Setenv("STRATA_TOKEN", "")
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"no credentials", jobs, "(Unauthenticated)"},
		{"agent certificate", append(slices.Clone(jobs), "--tls-cert", b.Files(authn.RoleAgent).Cert, "--tls-key", b.Files(authn.RoleAgent).Key), "(PermissionDenied)"},
		{"plain TCP", []string{"jobs", "--collector", c.Addr, "--tls-ca", ""}, "(Unavailable)"},
		{"token in the clear", []string{"jobs", "--collector", "10.9.9.9:7070", "--tls-ca", "", "--token-file", b.TokenFile()}, "in the clear"},
	} {
		var o, e bytes.Buffer
		if err := run(context.Background(), tc.args, &o, &e); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v (stdout %q); want an error saying %s", tc.name, err, o.String(), tc.says)
		}
	}
}
