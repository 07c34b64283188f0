package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/authn"
)

// probe asks the agent configured by cfg, on this machine, for /healthz
// with the agent's own credentials: the first token of its HTTP token
// file, or its collector client certificate (role agent, which /healthz
// accepts) when the HTTP endpoint verifies certificates. Over TLS the
// endpoint must present the agent's own HTTP certificate. It is the
// container's health check (`strata-agent probe`).
func probe(ctx context.Context, cfg config.Config) error {
	if cfg.HTTPAddr == "" {
		return errors.New("probe: no --http address to probe")
	}
	host, port, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme, tr := "http", &http.Transport{}
	if cfg.HTTPTLSCert != "" {
		scheme = "https"
		var cert, key string
		if cfg.HTTPClientCA != "" {
			cert, key = cfg.TLSCert, cfg.TLSKey
		}
		tcfg, err := authn.SelfTLS(cfg.HTTPTLSCert, cfg.HTTPTLSKey, cert, key)
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		tr.TLSClientConfig = tcfg
	}
	req, err := http.NewRequestWithContext(ctx, "GET", scheme+"://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if cfg.HTTPTokenFile != "" {
		toks, err := authn.LoadTokens(cfg.HTTPTokenFile)
		if err != nil {
			return err
		}
		tok, err := toks.First()
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
