package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/stratatrace/strata/agent/config"
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
