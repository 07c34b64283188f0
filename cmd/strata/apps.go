package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/stratatrace/strata/collector/query/jsonform"
)

func init() {
	register(command{name: "apps", args: "[--http ADDR] [flags]", summary: "list the applications the collector holds traces of", run: runApps,
		help: `One line per application the collector holds records of, latest first: its id (what --app takes),
its name (its analysed job's, from the event log or job history; - when the collector analysed
none), its executors and machines, its records, its cached RDD blocks live now, and the times of
its first and last record. The list
comes from the collector's JSON API (/api/v1/apps on its --http endpoint), with the credentials of
the other commands.

examples:
  strata apps --http collector.example:9090
  strata apps -o json | jq -r .app_id`})
}

// defaultHTTPPort is the port of the collector's HTTP endpoint (its
// --http) in the Kubernetes manifests, the chart and the README.
const defaultHTTPPort = "9090"

func runApps(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata apps", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	cf.output.addNoHeaders(fs)
	httpAddr := fs.String("http", os.Getenv("STRATA_COLLECTOR_HTTP"), "the collector's HTTP endpoint (its --http) `ADDR`: HOST[:PORT] (port "+
		defaultHTTPPort+" when none is given) or an http(s):// URL; default: the host of --collector ($STRATA_COLLECTOR_HTTP)")
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	base, err := cf.apiBase(*httpAddr)
	if err != nil {
		return err
	}
	var apps []jsonform.App
	if err := cf.apiGet(ctx, base, "/api/v1/apps", &apps); err != nil {
		return fmt.Errorf("apps: %w", err)
	}
	out := newOutput(stdout, cf.output, "APP", "NAME", "EXECUTORS", "MACHINES", "RECORDS", "LIVE BLOCKS", "FIRST", "LAST")
	for _, a := range apps {
		if err := out.row(a, a.AppID, orDash(a.Name), a.Executors, strings.Join(a.Machines, ","), a.Records, a.LiveBlocks,
			a.First, a.Last); err != nil {
			return errors.Join(fmt.Errorf("write apps: %w", err), out.flush())
		}
	}
	return out.flush()
}

// apiBase is the URL of the collector's HTTP endpoint named by addr: an
// http(s):// URL as it is, or HOST[:PORT] (port defaultHTTPPort when it
// names none) over https when the flags ask for TLS. An empty addr is the
// host of --collector.
func (c *clientFlags) apiBase(addr string) (string, error) {
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", badUsage(c.cmd, "--http %q: want HOST[:PORT] or an http(s):// URL", addr)
		}
		return strings.TrimRight(u.String(), "/"), nil
	}
	if addr == "" {
		host, _, err := net.SplitHostPort(c.collector)
		if err != nil || strings.HasPrefix(c.collector, "unix:") || strings.Contains(c.collector, ",") {
			return "", badUsage(c.cmd, "--http is required: the collector's HTTP address cannot be told from --collector %s", c.collector)
		}
		addr = host
	}
	scheme := "http"
	if c.secure() {
		scheme = "https"
	}
	return scheme + "://" + withDefaultPort(addr, defaultHTTPPort), nil
}

// maxAPIBytes bounds an API answer the CLI reads.
const maxAPIBytes = 64 << 20

// apiGet asks the collector's JSON API for path and decodes the answer
// into v, with the flags' credentials. An error answer is returned with
// its status and message.
func (c *clientFlags) apiGet(ctx context.Context, base, path string, v any) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("ask collector %s: %w", base, err)
	}
	tok, err := c.bearer(u.Host)
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if c.secure() {
		if tr.TLSClientConfig, err = c.tls.ClientConfig(c.serverName); err != nil {
			return fmt.Errorf("ask collector %s: %w", base, err)
		}
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return fmt.Errorf("ask collector %s: %w", base, err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("ask collector: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBytes))
	if err != nil {
		return fmt.Errorf("read %s: %w", req.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e jsonform.Error
		if json.Unmarshal(body, &e) == nil && e.Message != "" {
			return fmt.Errorf("GET %s: %s: %s", req.URL, resp.Status, e.Message)
		}
		return fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decode %s: %w", req.URL, err)
	}
	return nil
}
