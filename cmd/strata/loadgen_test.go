package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/server/servertest"
)

// strata loadgen against a collector that requires credentials: the
// simulated agents push with an agent certificate, --verify reads back
// with the token, and without credentials nothing is stored.
func TestLoadgenCredentials(t *testing.T) {
	dir := t.TempDir()
	strata(t, "certs", "init", "--dir", dir)
	b := authn.Bundle{Dir: dir}
	c := servertest.StartWith(t, nil, nil, func(cfg *server.Config) {
		f := b.Files(authn.RoleCollector)
		cfg.Insecure, cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA, cfg.TokenFile = false, f.Cert, f.Key, f.CA, b.TokenFile()
	})
	agent := b.Files(authn.RoleAgent)
	load := []string{"loadgen", "--collector", c.Addr, "--agents", "2", "--batches", "3", "--records", "4", "--pages", "8"}
	out := strata(t, append(load, "--tls-ca", b.CA(), "--tls-cert", agent.Cert, "--tls-key", agent.Key,
		"--token-file", b.TokenFile(), "--verify")...)
	if !strings.Contains(out, "6 batches (0 duplicates), 24 records") || !strings.Contains(out, "verify: 0 records lost, 0 duplicated") {
		t.Fatalf("loadgen with an agent certificate and a token:\n%s", out)
	}
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := run(ctx, append(load, "--tls-ca", ""), &o, &e)
	if err == nil || strings.Contains(o.String(), "6 batches") {
		t.Fatalf("loadgen without credentials: %v\n%s", err, o.String())
	}
}
