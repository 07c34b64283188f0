package main

import (
	"bytes"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/collector/server"
)

// TestFlagsAsTheAgentNamesThem: a flag strata shares with strata-agent
// means the same there and reads the same environment variable: the
// collector's address and the TLS files that reach it (both are its
// clients); hook-opts names the hook socket as the agent does
// (--hook-socket).
func TestFlagsAsTheAgentNamesThem(t *testing.T) {
	agent := flag.NewFlagSet("strata-agent", flag.ContinueOnError)
	if _, err := config.Load(agent, nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	probe := flag.NewFlagSet("strata trace", flag.ContinueOnError)
	addClientFlags(probe, true)
	var shared []string
	probe.VisitAll(func(f *flag.Flag) {
		if agent.Lookup(f.Name) == nil {
			return
		}
		shared = append(shared, f.Name)
		env := config.Variable(f.Name)
		t.Setenv(env, "/from/"+env)
		fs := flag.NewFlagSet("strata trace", flag.ContinueOnError)
		addClientFlags(fs, true)
		if got := fs.Lookup(f.Name).DefValue; got != "/from/"+env {
			t.Errorf("--%s: $%s, the agent's variable, gives %q", f.Name, env, got)
		}
	})
	if got := strings.Join(shared, " "); got != "collector tls-ca tls-cert tls-key tls-server-name" {
		t.Errorf("strata's client flags the agent has too: %s", got)
	}
	if agent.Lookup("hook-socket") == nil {
		t.Fatal("the agent has no --hook-socket")
	}
	if out, _, _ := call("hook-opts", "-h"); !strings.Contains(out, "-hook-socket PATH") {
		t.Errorf("strata hook-opts -h lacks --hook-socket:\n%s", out)
	}
}

// sharedSetting is a setting more than one of the three binaries takes,
// under one flag name (docs/flags.md holds the same table).
type sharedSetting struct {
	name string   // the flag's name in every binary in `in`
	in   []string // "strata-agent", "strata-collector", "strata COMMAND"
	env  string   // the variable strata and the agent read it from; "" when not both
	old  []string // former names in strata: hidden from help, still accepted
}

// sharedSettings are the settings two binaries share, and the names two
// binaries share although each means its own (its own certificate, its own
// configuration file, its own log), which are listed so that a name taken
// by a second binary is a decision.
var sharedSettings = []sharedSetting{
	{name: "collector", in: []string{"strata-agent", "strata trace"}, env: "STRATA_COLLECTOR"},
	{name: "tls-ca", in: []string{"strata-agent", "strata trace"}, env: "STRATA_TLS_CA"},
	{name: "tls-server-name", in: []string{"strata-agent", "strata trace"}, env: "STRATA_TLS_SERVER_NAME"},
	{name: "tls-cert", in: []string{"strata-agent", "strata-collector", "strata trace"}, env: "STRATA_TLS_CERT"},
	{name: "tls-key", in: []string{"strata-agent", "strata-collector", "strata trace"}, env: "STRATA_TLS_KEY"},
	{name: "token-file", in: []string{"strata-collector", "strata trace"}},
	{name: "hook-socket", in: []string{"strata-agent", "strata hook-opts"}, env: "STRATA_HOOK_SOCKET", old: []string{"socket"}},
	{name: "install-hook", in: []string{"strata-agent", "strata hook-opts"}, env: "STRATA_HOOK_INSTALL_DIR", old: []string{"dir"}},
	{name: "http", in: []string{"strata-agent", "strata-collector", "strata apps"}},
	{name: "heuristics", in: []string{"strata-collector", "strata analyze"}, old: []string{"config"}},
	{name: "clickhouse-database", in: []string{"strata-collector", "strata clickhouse-schema"}, old: []string{"database"}},
	{name: "clickhouse-cluster", in: []string{"strata-collector", "strata clickhouse-schema"}, old: []string{"cluster"}},
	{name: "config", in: []string{"strata-agent", "strata-collector"}},
	{name: "log-level", in: []string{"strata-agent", "strata-collector"}},
	{name: "nice", in: []string{"strata-agent", "strata-collector"}},
	{name: "pyroscope-server", in: []string{"strata-agent", "strata-collector"}},
}

// helpFlag is a flag line of -h: its name and its placeholder.
var helpFlag = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)

// helpFlags are the flags help lists in out, with each one's text.
func helpFlags(out string) map[string]string {
	flags := map[string]string{}
	locs := helpFlag.FindAllStringSubmatchIndex(out, -1)
	for i, l := range locs {
		end := len(out)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		flags[out[l[2]:l[3]]] = out[l[0]:end]
	}
	return flags
}

// TestOneNamePerSetting: every setting two of strata, strata-agent and
// strata-collector take has one flag name in all of them, as
// sharedSettings lists it, and one variable in strata and the agent; a
// name two binaries have is in the table; a former name is left out of
// help. The flags are what each binary's -h lists.
func TestOneNamePerSetting(t *testing.T) {
	empty := func(string) string { return "" }
	flags := map[string]map[string]string{} // binary or "strata COMMAND" -> flag -> help text
	agent := flag.NewFlagSet("strata-agent", flag.ContinueOnError)
	if _, err := config.Load(agent, nil, empty); err != nil {
		t.Fatal(err)
	}
	var agentHelp bytes.Buffer
	agent.SetOutput(&agentHelp)
	agent.PrintDefaults()
	flags["strata-agent"] = helpFlags(agentHelp.String())
	var collectorHelp bytes.Buffer
	if _, err := server.Load([]string{"-h"}, empty, &collectorHelp); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("strata-collector -h: %v", err)
	}
	flags["strata-collector"] = helpFlags(collectorHelp.String())
	strataNames := map[string]bool{}
	for name := range commands {
		out, _, code := call(name, "-h")
		if code != 0 {
			t.Fatalf("strata %s -h: exit %d", name, code)
		}
		flags["strata "+name] = helpFlags(out)
		for f := range flags["strata "+name] {
			strataNames[f] = true
		}
	}
	for _, b := range []string{"strata-agent", "strata-collector"} {
		if len(flags[b]) < 10 {
			t.Fatalf("%s -h lists %d flags: %v", b, len(flags[b]), flags[b])
		}
	}

	listed := map[string]bool{}
	for _, s := range sharedSettings {
		listed[s.name] = true
		for _, in := range s.in {
			text, ok := flags[in][s.name]
			if !ok {
				t.Errorf("%s has no --%s", in, s.name)
				continue
			}
			if s.env == "" {
				continue
			}
			switch {
			case in == "strata-agent" && config.Variable(s.name) != s.env:
				t.Errorf("strata-agent reads --%s from $%s, want $%s", s.name, config.Variable(s.name), s.env)
			case strings.HasPrefix(in, "strata ") && !strings.Contains(text, "$"+s.env):
				t.Errorf("%s --%s does not name $%s:\n%s", in, s.name, s.env, text)
			}
		}
		for _, o := range s.old {
			for _, in := range s.in {
				if _, shown := flags[in][o]; shown && strings.HasPrefix(in, "strata ") {
					t.Errorf("%s -h lists --%s, the former name of --%s", in, o, s.name)
				}
			}
		}
	}
	// A name in two binaries is a setting of the table.
	for name := range strataNames {
		for _, b := range []string{"strata-agent", "strata-collector"} {
			if _, ok := flags[b][name]; ok && !listed[name] && name != "version" {
				t.Errorf("strata and %s both have --%s, which sharedSettings does not list", b, name)
			}
		}
	}
	for name := range flags["strata-agent"] {
		if _, ok := flags["strata-collector"][name]; ok && !listed[name] && name != "version" {
			t.Errorf("strata-agent and strata-collector both have --%s, which sharedSettings does not list", name)
		}
	}
}
