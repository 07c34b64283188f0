package main

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/collector/store/storetest"
)

// call runs strata in-process as main does: stdout, stderr and the exit
// status.
func call(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := exitStatus(run(context.Background(), args, &out, &errOut), &errOut)
	return out.String(), errOut.String(), code
}

// genericPlaceholder is a flag shown with its Go type instead of what it
// takes: "-rdd value", "-limit uint".
var genericPlaceholder = regexp.MustCompile(`(?m)^\s+-[a-z-]+ (value|string|int|uint|int64|float|duration)$`)

// TestHelp: strata help, -h and --help list every command on stdout; each
// command's -h (and strata help CMD) prints its synopsis, description and
// flags with placeholders that say what they take, on stdout, exit 0.
func TestHelp(t *testing.T) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		out, errOut, code := call(args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "usage: strata COMMAND") {
			t.Errorf("strata %s: exit %d, stderr %q\n%s", args[0], code, errOut, out)
		}
		for _, n := range names {
			if !strings.Contains(out, "  "+n+" ") {
				t.Errorf("strata %s does not list %s", args[0], n)
			}
		}
	}
	for _, n := range names {
		c := commands[n]
		if c.args == "" || c.summary == "" || c.help == "" {
			t.Errorf("%s: no synopsis, summary or description", n)
		}
		out, errOut, code := call(n, "-h")
		if code != 0 || errOut != "" {
			t.Errorf("strata %s -h: exit %d, stderr %q", n, code, errOut)
		}
		if !strings.HasPrefix(out, "usage: strata "+n+" "+c.args+"\n") || !strings.Contains(out, "\nflags:\n") {
			t.Errorf("strata %s -h: no synopsis or flags:\n%s", n, out)
		}
		if m := genericPlaceholder.FindString(out); m != "" {
			t.Errorf("strata %s -h: a flag without its placeholder: %q", n, m)
		}
		if again, _, _ := call("help", n); again != out {
			t.Errorf("strata help %s differs from strata %s -h", n, n)
		}
	}
	out, _, _ := call("trace", "--help")
	for _, want := range []string{"-app ID", "-rdd ID", "-partition N", "-limit N", "-at TIME", "-collector ADDR", "-o FORMAT",
		"-tls-ca FILE", "port " + defaultCollectorPort} {
		if !strings.Contains(out, want) {
			t.Errorf("strata trace --help lacks %q:\n%s", want, out)
		}
	}
}

// TestExitStatus: usage errors go to stderr with exit status 2 and say
// where the help is; a failure is exit status 1; --version is no error.
func TestExitStatus(t *testing.T) {
	addr := collector(t)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{nil, 2, "usage: strata COMMAND"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"help", "nope"}, 2, `unknown command "nope"`},
		{[]string{"trace", "--nope"}, 2, "flag provided but not defined: -nope"},
		{[]string{"trace", "--collector", addr}, 2, "strata trace: --app is required"},
		{[]string{"trace", "--collector", addr, "--app", "a", "stray"}, 2, "unexpected arguments"},
		{[]string{"trace", "--collector", addr, "--app", "a", "--rdd", "seven"}, 2, "not a 32-bit integer"},
		{[]string{"faults", "--collector", addr, "--app", "a", "-o", "yaml"}, 2, `-o "yaml": want table or json`},
		{[]string{"numa", "--collector", addr}, 2, "--app is required"},
		{[]string{"report", "--collector", addr}, 2, "--app is required"},
		{[]string{"report", "--collector", addr, "--app", storetest.App, "--chart", "x.gif"}, 2, "want a .svg or .png file"},
		{[]string{"heat", "--collector", addr, "--app", "a", "--cold-for", "-1s"}, 2, "--cold-for -1s"},
		{[]string{"jobs", "--collector", addr, "--severity", "meh"}, 2, `--severity "meh"`},
		{[]string{"job", "--collector", addr}, 2, "JOB_ID is required"},
		{[]string{"resolve", "--pid", "1"}, 2, "--addr is required"},
		{[]string{"certs"}, 2, "want init, issue or token"},
		{[]string{"certs", "init"}, 2, "--dir is required"},
		{[]string{"analyze"}, 2, "a PATH or URL to analyse is required"},
		{[]string{"analyze", "-o", "yaml", "x"}, 2, `-o "yaml"`},
		{[]string{"clickhouse-schema", "--clickhouse-database", "a-b"}, 2, "plain names"},
		{[]string{"job", "--collector", addr, "job_nope"}, 1, "(NotFound)"},
		{[]string{"jobs", "--collector", "127.0.0.1:1"}, 1, "refused the connection"},
	} {
		out, errOut, code := call(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.says) {
			t.Errorf("strata %s: exit %d, stderr %q; want %d saying %q", strings.Join(tc.args, " "), code, errOut, tc.code, tc.says)
		}
		if tc.code == 2 && tc.args != nil && !strings.Contains(errOut, "-h' for usage") {
			t.Errorf("strata %s: stderr %q does not say where the help is", strings.Join(tc.args, " "), errOut)
		}
		if tc.code != 0 && tc.args != nil && out != "" {
			t.Errorf("strata %s: stdout %q", strings.Join(tc.args, " "), out)
		}
	}
	for _, v := range []string{"--version", "version", "-version"} {
		out, errOut, code := call(v)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "strata dev go") {
			t.Errorf("strata %s: exit %d, %q %q", v, code, out, errOut)
		}
	}
}

// TestUnknownApp: every per-app command asked about an application the
// collector holds no record of says so, naming the app and strata apps,
// with exit status 1 and nothing on stdout (no table header); a known
// app whose filter selects nothing is an empty answer, exit 0.
func TestUnknownApp(t *testing.T) {
	addr := collector(t)
	for _, cmd := range [][]string{{"trace"}, {"trace", "--at", "peak"}, {"records"}, {"numa"}, {"numa", "--at", "now"}, {"faults"},
		{"overhead"}, {"hot"}, {"report"}, {"heat"}} {
		for _, format := range []string{"table", "json"} {
			out, errOut, code := call(append(cmd, "--collector", addr, "--app", "application_nope", "-o", format)...)
			if code != 1 || out != "" || !strings.Contains(errOut, "no traces of application application_nope") ||
				!strings.Contains(errOut, "strata apps") || strings.Contains(errOut, "probe") {
				t.Errorf("strata %s -o %s of an unknown app: exit %d, stdout %q, stderr %q", cmd, format, code, out, errOut)
			}
		}
	}
	for _, args := range [][]string{
		{"trace", "--app", storetest.App, "--rdd", "99"},
		{"records", "--app", storetest.App, "--block", "rdd_99_0"},
		{"hot", "--app", storetest.App, "--rdd", "99"},
	} {
		out, errOut, code := call(append(args, "--collector", addr)...)
		if code != 0 || strings.Count(out, "\n") > 2 {
			t.Errorf("strata %s: exit %d, stdout %q, stderr %q; want an empty answer", strings.Join(args, " "), code, out, errOut)
		}
	}
	// An app the collector analysed as a job but holds no traces of is
	// reported by its job alone.
	out, errOut, code := call("report", "--collector", addr, "--app", "job_1526555215992_0001", "-o", "json")
	if code != 0 || !strings.Contains(out, `"name":"etl-`) {
		t.Errorf("report of a job without traces: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCollectorPort: --collector without a port dials the collector's
// default listen port.
func TestCollectorPort(t *testing.T) {
	_, port, err := net.SplitHostPort(server.Defaults().Listen)
	if err != nil || port != defaultCollectorPort {
		t.Fatalf("the collector listens on %s by default, strata assumes port %s", server.Defaults().Listen, defaultCollectorPort)
	}
	for in, want := range map[string]string{
		"127.0.0.1":               "127.0.0.1:7070",
		"collector-1":             "collector-1:7070",
		"collector-1:":            "collector-1:7070",
		"collector-1:7171":        "collector-1:7171",
		"::1":                     "[::1]:7070",
		"[::1]":                   "[::1]:7070",
		"[::1]:9":                 "[::1]:9",
		"unix:/run/strata.sock":   "unix:/run/strata.sock",
		"dns:///collector-1:7070": "dns:///collector-1:7070",
		"a,b:1":                   "a:7070,b:1",
	} {
		c := clientFlags{collector: in, output: outputFormat{name: "table"}}
		if err := c.check(); err != nil || c.collector != want {
			t.Errorf("--collector %s: %q, %v; want %s", in, c.collector, err, want)
		}
	}
}

// TestAPIBase: strata apps asks the collector's HTTP endpoint: --http's
// host with port 9090 when it names none, https with TLS credentials,
// a URL as given; without --http, the host of --collector.
func TestAPIBase(t *testing.T) {
	for _, tc := range []struct {
		collector, http, ca, want string
	}{
		{"10.0.0.7:7070", "", "", "http://10.0.0.7:9090"},
		{"10.0.0.7:7070", "c1", "", "http://c1:9090"},
		{"10.0.0.7:7070", "c1:8080", "ca.pem", "https://c1:8080"},
		{"10.0.0.7:7070", "https://c1:1/", "", "https://c1:1"},
		{"unix:/run/c.sock", "", "", ""},
		{"10.0.0.7:7070", "ftp://c1", "", ""},
	} {
		c := clientFlags{cmd: "apps", collector: tc.collector}
		c.tls.CA = tc.ca
		got, err := c.apiBase(tc.http)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("--collector %s --http %q: %q, %v; want %q", tc.collector, tc.http, got, err, tc.want)
		}
	}
}

// The real binary: help on stdout with exit status 0, a usage error on
// stderr with 2, a failure with 1, and its version.
func TestBinaryExitStatus(t *testing.T) {
	bin := strataBinary(t)
	for _, tc := range []struct {
		args     []string
		code     int
		stdout   string // a prefix
		inStderr string
	}{
		{[]string{"trace", "-h"}, 0, "usage: strata trace --app ID", ""},
		{[]string{"help"}, 0, "strata: ", ""},
		{[]string{"--version"}, 0, "strata ", ""},
		{[]string{"nope"}, 2, "", `unknown command "nope"`},
		{[]string{"records", "--app"}, 2, "", "flag needs an argument: -app"},
		{[]string{"jobs", "--collector", "127.0.0.1:1"}, 1, "", "refused the connection"},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.HasPrefix(stdout.String(), tc.stdout) ||
			(tc.stdout == "" && stdout.Len() > 0) || !strings.Contains(stderr.String(), tc.inStderr) || (tc.code == 0 && stderr.Len() > 0) {
			t.Errorf("strata %s: exit %d, stdout %.200q, stderr %q", strings.Join(tc.args, " "), code, stdout.String(), stderr.String())
		}
	}
}
