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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/query/jsonform"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// defaultCollector is used when neither --collector nor $STRATA_COLLECTOR is
// set; defaultCollectorPort, the collector's default listen port, when the
// address names no port.
const (
	defaultCollector     = "127.0.0.1:" + defaultCollectorPort
	defaultCollectorPort = "7070"
)

// clientFlags are the flags every collector-querying command takes.
type clientFlags struct {
	cmd       string // the command's name, for usage errors
	collector string
	output    outputFormat
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
	c := &clientFlags{cmd: commandOf(fs), output: outputFormat{name: "table"}, token: os.Getenv("STRATA_TOKEN")}
	env := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.collector, "collector", env("STRATA_COLLECTOR", defaultCollector),
		"`ADDR` of the collector's gRPC endpoint: HOST[:PORT] (port "+defaultCollectorPort+", the collector's default, when none is given) or unix:PATH ($STRATA_COLLECTOR)")
	fs.StringVar(&c.tls.CA, "tls-ca", os.Getenv("STRATA_TLS_CA"), "PEM `FILE` of the CA that signed the collector's certificate; TLS when set ($STRATA_TLS_CA)")
	fs.StringVar(&c.tls.Cert, "tls-cert", os.Getenv("STRATA_TLS_CERT"), "PEM `FILE` of a client certificate, OU client ($STRATA_TLS_CERT)")
	fs.StringVar(&c.tls.Key, "tls-key", os.Getenv("STRATA_TLS_KEY"), "PEM `FILE` of the private key of --tls-cert ($STRATA_TLS_KEY)")
	fs.StringVar(&c.serverName, "tls-server-name", os.Getenv("STRATA_TLS_SERVER_NAME"), "`NAME` the collector's certificate must carry ($STRATA_TLS_SERVER_NAME)")
	fs.StringVar(&c.tokenFile, "token-file", os.Getenv("STRATA_TOKEN_FILE"),
		"`FILE` whose first token is sent as a bearer token ($STRATA_TOKEN_FILE; or the token itself in $STRATA_TOKEN)")
	if withOutput {
		fs.StringVar(&c.output.name, "o", "table", "output `FORMAT`: table, or json (one object per line)")
	}
	return c
}

// parseFlags parses args into fs, whose name is "strata COMMAND ...". It
// returns false when the command should stop: with nil after -h, whose help
// (commandHelp) it printed to stdout, and with a usage error after a bad
// flag, whose reason the flag package printed to stderr.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (bool, error) {
	name := commandOf(fs)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // exitStatus says where the help is
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		commandHelp(stdout, commands[name], func(w io.Writer) { printFlags(w, fs) })
		return false, nil
	}
	if err != nil {
		return false, printedUsage(name)
	}
	return true, nil
}

// deprecatedUsage starts the usage of a flag kept under an old name; help
// leaves such flags out.
const deprecatedUsage = "deprecated: "

// printFlags prints fs's flags as flag.PrintDefaults does, without the
// deprecated ones, each default as it was before parsing.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, deprecatedUsage) {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.SetOutput(w)
	shown.PrintDefaults()
}

// oldFlag keeps old as a hidden name of the string flag now: a value given
// to it sets now, and one line on stderr names the flag to use.
func oldFlag(fs *flag.FlagSet, stderr io.Writer, old, now string) {
	f := fs.Lookup(now)
	fs.Func(old, deprecatedUsage+"the old name of --"+now, func(s string) error {
		fmt.Fprintf(stderr, "%s: --%s is deprecated: use --%s\n", fs.Name(), old, now)
		return f.Value.Set(s)
	})
}

// parseClientFlags is parseFlags for a command that takes its flags and no
// arguments, followed by the common flags' check.
func parseClientFlags(fs *flag.FlagSet, cf *clientFlags, args []string, stdout, stderr io.Writer) (bool, error) {
	if ok, err := parseFlags(fs, args, stdout, stderr); !ok {
		return false, err
	}
	if fs.NArg() > 0 {
		return false, badUsage(cf.cmd, "unexpected arguments %q", fs.Args())
	}
	if err := cf.check(); err != nil {
		return false, err
	}
	return true, nil
}

// commandOf is the command a flag set named "strata NAME ..." belongs to.
func commandOf(fs *flag.FlagSet) string {
	if f := strings.Fields(fs.Name()); len(f) > 1 {
		return f[1]
	}
	return ""
}

// check validates the common flags and gives --collector its default
// port.
func (c *clientFlags) check() error {
	if c.collector == "" {
		return badUsage(c.cmd, "empty --collector")
	}
	if err := c.output.check(c.cmd); err != nil {
		return err
	}
	addrs := strings.Split(c.collector, ",")
	for i, a := range addrs {
		addrs[i] = withDefaultPort(strings.TrimSpace(a), defaultCollectorPort)
	}
	c.collector = strings.Join(addrs, ",")
	return nil
}

// withDefaultPort is addr with port added when addr is a host name or IP
// address without one ("collector-1", "10.0.0.7", "::1", "[::1]"); other
// addresses (host:port, unix:PATH, a gRPC target such as dns:///host:port)
// are returned as they are.
func withDefaultPort(addr, port string) string {
	switch {
	case addr == "" || strings.HasPrefix(addr, "unix:") || strings.Contains(addr, ":///"):
		return addr
	case strings.HasPrefix(addr, "[") && strings.HasSuffix(addr, "]"):
		return addr + ":" + port
	case net.ParseIP(addr) != nil:
		return net.JoinHostPort(addr, port)
	}
	host, p, err := net.SplitHostPort(addr)
	switch {
	case err == nil && p == "":
		return net.JoinHostPort(host, port)
	case err != nil && !strings.Contains(addr, ":"):
		return net.JoinHostPort(addr, port)
	}
	return addr
}

// dialOptions are the credentials the flags name: TLS when a CA or a
// certificate is given, and a bearer token (over plain TCP only to a
// collector on this machine).
func (c *clientFlags) dialOptions() ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	secure := c.secure()
	if secure {
		cfg, err := c.tls.ClientConfig(c.serverName)
		if err != nil {
			return nil, fmt.Errorf("dial collector: %w", err)
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	tok, err := c.bearer(c.collector)
	if err != nil {
		return nil, err
	}
	if tok != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(authn.BearerToken{Token: tok, AllowPlaintext: !secure}))
	}
	return opts, nil
}

// secure reports whether the flags ask for TLS: a CA or a certificate.
func (c *clientFlags) secure() bool { return c.tls.CA != "" || c.tls.Cert != "" }

// bearer is the bearer token the flags name ("" for none), refused when
// it would travel to addr in the clear over the network.
func (c *clientFlags) bearer(addr string) (string, error) {
	tok := c.token
	if c.tokenFile != "" {
		data, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return "", fmt.Errorf("dial collector: read token: %w", err)
		}
		if tok, err = authn.FirstToken(data); err != nil {
			return "", fmt.Errorf("dial collector: %w", err)
		}
	}
	if tok != "" && !c.secure() && !local(addr) {
		return "", fmt.Errorf("dial collector %s: a token would cross the network in the clear: add --tls-ca", addr)
	}
	return tok, nil
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

// rpcError turns a gRPC error into "verb: message (Code)", and a refused
// connection into words.
func rpcError(verb string, err error) error {
	if s, ok := status.FromError(err); ok {
		if s.Code() == codes.Unavailable && strings.Contains(s.Message(), "connection refused") {
			return fmt.Errorf("%s: the collector refused the connection: %s", verb, s.Message())
		}
		return fmt.Errorf("%s: %s (%s)", verb, s.Message(), s.Code())
	}
	return fmt.Errorf("%s: %w", verb, err)
}

// appError is rpcError for a question about application app: the
// collector's NotFound for the app itself (its message starts
// "application APP:") becomes the error that names the app and the
// command that lists those the collector has.
func appError(verb, app string, err error) error {
	if s, ok := status.FromError(err); ok && s.Code() == codes.NotFound && strings.HasPrefix(s.Message(), "application "+app+":") {
		return fmt.Errorf("%s: no traces of application %s on the collector (strata apps lists the applications it has)", verb, app)
	}
	return rpcError(verb, err)
}

// outputFormat is how a command prints its rows: -o (a table, or JSON lines)
// and, on the commands that print tables, --no-headers.
type outputFormat struct {
	name      string // table or json
	noHeaders bool   // tables without their header lines
}

// jsonRows is the format of JSON lines.
func jsonRows() outputFormat { return outputFormat{name: "json"} }

// json reports whether rows are printed as JSON lines.
func (f outputFormat) json() bool { return f.name == "json" }

// check refuses an -o other than table and json.
func (f outputFormat) check(cmd string) error {
	if f.name != "table" && f.name != "json" {
		return badUsage(cmd, "-o %q: want table or json", f.name)
	}
	return nil
}

// addNoHeaders registers --no-headers (kubectl's name) on fs.
func (f *outputFormat) addNoHeaders(fs *flag.FlagSet) {
	fs.BoolVar(&f.noHeaders, "no-headers", false, "print tables without their header lines and the notes around them: the rows alone")
}

// comment writes a line that is not a row — a table's header, a note
// about it — unless the table goes without headers or the rows are JSON.
func (f outputFormat) comment(w io.Writer, line string) {
	if !f.json() && !f.noHeaders {
		fmt.Fprintln(w, line)
	}
}

// output writes rows either as an aligned table or as JSON lines, each
// line a collector/query/jsonform form written by its Encoder: the
// collector's /api/v1 writes the same objects. The table's header is
// written with its first row, or by flush when there is none.
type output struct {
	json   bool
	enc    *jsonform.Encoder
	tw     *tabwriter.Writer
	header []string // not written yet
}

// newOutput starts an output in format f; header is the table's first
// line, left out with f.noHeaders.
func newOutput(w io.Writer, f outputFormat, header ...string) *output {
	if f.json() {
		return &output{json: true, enc: jsonform.NewEncoder(w)}
	}
	if f.noHeaders {
		header = nil
	}
	return &output{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), header: header}
}

// writeHeader writes the table's header, once.
func (o *output) writeHeader() {
	if o.header != nil {
		fmt.Fprintln(o.tw, strings.Join(o.header, "\t"))
		o.header = nil
	}
}

// row writes obj (a jsonform form) as one JSON line, or cells as one
// table line.
func (o *output) row(obj any, cells ...any) error {
	if o.json {
		return o.enc.Encode(obj)
	}
	o.writeHeader()
	for i, c := range cells {
		if i > 0 {
			io.WriteString(o.tw, "\t")
		}
		fmt.Fprint(o.tw, c)
	}
	_, err := io.WriteString(o.tw, "\n")
	return err
}

// flush ends the table: a table without rows is its header alone.
func (o *output) flush() error {
	if o.tw != nil {
		o.writeHeader()
		return o.tw.Flush()
	}
	return nil
}

// flushRows ends the rows written before an error: no header when there
// were none.
func (o *output) flushRows() error {
	if o.tw != nil {
		return o.tw.Flush()
	}
	return nil
}
