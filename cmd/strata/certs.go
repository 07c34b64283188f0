package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stratatrace/strata/authn"
)

func init() {
	register(command{name: "certs", args: "init|issue|token [flags]", summary: "make a test CA, certificates and tokens for mutual TLS",
		run: runCerts, help: `  strata certs init  --dir DIR [--hosts H1,H2] [--days N]
      a CA and, signed by it, the collector's certificate (for the hosts
      agents and users dial, plus localhost), one agent and one client
      certificate, and a bearer token
  strata certs issue --dir DIR --role agent|client|collector --name NAME [--hosts H1,H2] [--days N] [--out OUT]
      one more certificate from the CA in DIR, as OUT/NAME.crt and NAME.key
  strata certs token
      print a new bearer token (append it to the collector's token file)

The role goes in the certificate's Organizational Unit; the collector lets
agents push, clients query, and everyone ask for health. Keep ca.key off the
nodes. For production, issue the same roles from your own PKI (cert-manager:
subject.organizationalUnits).`})
}

func runCerts(_ context.Context, args []string, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("strata certs", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory `DIR` of the CA (created by init)")
	hosts := fs.String("hosts", "", "comma-separated DNS names and IP addresses the certificate serves (`H1,H2`)")
	days := fs.Int("days", 365, "validity in `DAYS`")
	role := fs.String("role", "", "`ROLE` of the certificate: agent, client or collector (issue)")
	name := fs.String("name", "", "common name and file name `NAME` (issue)")
	out := fs.String("out", "", "directory `DIR` for the issued files (issue; default --dir)")
	if ok, err := parseFlags(fs, args, stdout, stderr); !ok {
		return err
	}
	if fs.NArg() != 0 {
		return badUsage("certs", "unexpected argument %q", fs.Arg(0))
	}
	if sub != "init" && sub != "issue" && sub != "token" {
		return badUsage("certs", "want init, issue or token, not %q", sub)
	}
	validity := time.Duration(*days) * 24 * time.Hour
	var hostList []string
	for h := range strings.SplitSeq(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hostList = append(hostList, h)
		}
	}
	switch sub {
	case "init":
		if *dir == "" {
			return badUsage("certs", "init: --dir is required")
		}
		if _, err := os.Stat(*dir + "/ca.key"); err == nil {
			return fmt.Errorf("certs init: %s already holds a CA; issue from it or pick another --dir", *dir)
		}
		b, err := authn.WriteBundle(*dir, append(hostList, "localhost", "127.0.0.1", "::1"), validity)
		if err != nil {
			return fmt.Errorf("certs init: %w", err)
		}
		col, ag, cl := b.Files(authn.RoleCollector), b.Files(authn.RoleAgent), b.Files(authn.RoleClient)
		fmt.Fprintf(stdout, "wrote the CA, three certificates and a token to %s\n\n", *dir)
		fmt.Fprintf(stdout, "strata-collector --tls-cert %s --tls-key %s --tls-client-ca %s --token-file %s ...\n", col.Cert, col.Key, b.CA(), b.TokenFile())
		fmt.Fprintf(stdout, "strata-agent --tls-ca %s --tls-cert %s --tls-key %s ...\n", b.CA(), ag.Cert, ag.Key)
		fmt.Fprintf(stdout, "strata jobs --tls-ca %s --tls-cert %s --tls-key %s   (or --token-file %s)\n", b.CA(), cl.Cert, cl.Key, b.TokenFile())
		return nil
	case "issue":
		if *dir == "" || *role == "" || *name == "" {
			return badUsage("certs", "issue: --dir, --role and --name are required")
		}
		if strings.ContainsAny(*name, "/\\") {
			return fmt.Errorf("certs issue: name %q must not hold a path separator", *name)
		}
		ca, err := authn.LoadCA(*dir)
		if err != nil {
			return fmt.Errorf("certs issue: %w", err)
		}
		leaf, err := ca.Issue(authn.Role(*role), *name, hostList, validity)
		if err != nil {
			return fmt.Errorf("certs issue: %w", err)
		}
		if *out == "" {
			*out = *dir
		}
		if err := os.MkdirAll(*out, 0o700); err != nil {
			return fmt.Errorf("certs issue: %w", err)
		}
		c, k, err := authn.WriteFiles(*out, *name, leaf.Cert, leaf.Key)
		if err != nil {
			return fmt.Errorf("certs issue: %w", err)
		}
		fmt.Fprintf(stdout, "%s\n%s\n", c, k)
		return nil
	case "token":
		tok, err := authn.NewToken()
		if err != nil {
			return fmt.Errorf("certs token: %w", err)
		}
		fmt.Fprintln(stdout, tok)
		return nil
	}
	return nil
}
