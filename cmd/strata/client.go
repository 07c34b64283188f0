package main

// This file holds what the collector-querying commands share: the
// --collector, credential and -o flags, the dial, and table/JSON-lines
// output.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"text/tabwriter"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// defaultCollector is used when neither --collector nor $STRATA_COLLECTOR is set.
const defaultCollector = "127.0.0.1:7070"

// clientFlags are the flags every collector-querying command takes.
type clientFlags struct {
	collector string
	output    string
	// Credentials (package authn): a client certificate of role client,
	// or a bearer token; TLS when a CA or a certificate is given.
	tls        authn.TLSFiles
	serverName string
	tokenFile  string
	token      string // from $STRATA_TOKEN only: a flag would show in ps
}

// addClientFlags registers --collector, the credential flags and, when
// withOutput, -o on fs. Each flag's default comes from its environment
// variable.
func addClientFlags(fs *flag.FlagSet, withOutput bool) *clientFlags {
	c := &clientFlags{output: "table", token: os.Getenv("STRATA_TOKEN")}
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.collector, "collector", env("STRATA_COLLECTOR", defaultCollector), "collector address: host:port or unix:PATH ($STRATA_COLLECTOR)")
	fs.StringVar(&c.tls.CA, "tls-ca", os.Getenv("STRATA_TLS_CA"), "PEM CA that signed the collector's certificate; TLS when set ($STRATA_TLS_CA)")
	fs.StringVar(&c.tls.Cert, "tls-cert", os.Getenv("STRATA_TLS_CERT"), "PEM client certificate, OU client ($STRATA_TLS_CERT)")
	fs.StringVar(&c.tls.Key, "tls-key", os.Getenv("STRATA_TLS_KEY"), "PEM private key of --tls-cert ($STRATA_TLS_KEY)")
	fs.StringVar(&c.serverName, "tls-server-name", os.Getenv("STRATA_TLS_SERVER_NAME"), "name the collector's certificate must carry ($STRATA_TLS_SERVER_NAME)")
	fs.StringVar(&c.tokenFile, "token-file", os.Getenv("STRATA_TOKEN_FILE"), "file whose first token is sent as a bearer token ($STRATA_TOKEN_FILE; or the token itself in $STRATA_TOKEN)")
	if withOutput {
		fs.StringVar(&c.output, "o", "table", "output: table, or json (one object per line)")
	}
	return c
}

// parseFlags parses args into fs, the flag package printing the reason and
// usage to stderr. It returns false when the command should stop: with nil
// after -h, with errUsage after a bad flag.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (bool, error) {
	fs.SetOutput(stderr)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return false, nil
	}
	if err != nil {
		return false, errUsage
	}
	return true, nil
}

// check validates the common flags.
func (c *clientFlags) check() error {
	if c.collector == "" {
		return errors.New("check flags: empty --collector")
	}
	if c.output != "table" && c.output != "json" {
		return fmt.Errorf("check flags: -o %q: want table or json", c.output)
	}
	return nil
}

// dialOptions are the credentials the flags name: TLS when a CA or a
// certificate is given, and a bearer token (over plain TCP only to a
// collector on this machine).
func (c *clientFlags) dialOptions() ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	secure := c.tls.CA != "" || c.tls.Cert != ""
	if secure {
		cfg, err := c.tls.ClientConfig(c.serverName)
		if err != nil {
			return nil, fmt.Errorf("dial collector: %w", err)
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	tok := c.token
	if c.tokenFile != "" {
		data, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("dial collector: read token: %w", err)
		}
		if tok, err = authn.FirstToken(data); err != nil {
			return nil, fmt.Errorf("dial collector: %w", err)
		}
	}
	if tok != "" {
		if !secure && !local(c.collector) {
			return nil, fmt.Errorf("dial collector %s: a token would cross the network in the clear: add --tls-ca", c.collector)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(authn.BearerToken{Token: tok, AllowPlaintext: !secure}))
	}
	return opts, nil
}

// local reports whether a collector address is on this machine.
func local(addr string) bool {
	if strings.HasPrefix(addr, "unix:") {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// dial connects to the collector. The connection is lazy: errors surface on
// the first call, which carries the caller's context.
func (c *clientFlags) dial() (*grpc.ClientConn, stratav1.QueryServiceClient, error) {
	opts, err := c.dialOptions()
	if err != nil {
		return nil, nil, err
	}
	cc, err := grpc.NewClient(c.collector, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("dial collector %s: %w", c.collector, err)
	}
	return cc, stratav1.NewQueryServiceClient(cc), nil
}

// rpcError turns a gRPC error into "verb: message (Code)".
func rpcError(verb string, err error) error {
	if s, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s (%s)", verb, s.Message(), s.Code())
	}
	return fmt.Errorf("%s: %w", verb, err)
}

// output writes rows either as an aligned table or as JSON lines, each
// line a collector/query/jsonform form written by its Encoder: the
// collector's /api/v1 writes the same objects.
type output struct {
	json bool
	enc  *jsonform.Encoder
	tw   *tabwriter.Writer
}

// newOutput starts an output in format; header is the table's first line.
func newOutput(w io.Writer, format string, header ...string) *output {
	if format == "json" {
		return &output{json: true, enc: jsonform.NewEncoder(w)}
	}
	o := &output{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(o.tw, strings.Join(header, "\t"))
	return o
}

// row writes obj (a jsonform form) as one JSON line, or cells as one
// table line.
func (o *output) row(obj any, cells ...any) error {
	if o.json {
		return o.enc.Encode(obj)
	}
	for i, c := range cells {
		if i > 0 {
			io.WriteString(o.tw, "\t")
		}
		fmt.Fprint(o.tw, c)
	}
	_, err := io.WriteString(o.tw, "\n")
	return err
}

// flush ends the table.
func (o *output) flush() error {
	if o.tw != nil {
		return o.tw.Flush()
	}
	return nil
}
