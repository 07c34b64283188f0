package main

// This file holds what the collector-querying commands share: the
// --collector and -o flags, the dial, and table/JSON-lines output.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// defaultCollector is used when neither --collector nor $STRATA_COLLECTOR is set.
const defaultCollector = "127.0.0.1:7070"

// clientFlags are the flags every collector-querying command takes.
type clientFlags struct {
	collector string
	output    string
}

// addClientFlags registers --collector and, when withOutput, -o on fs.
func addClientFlags(fs *flag.FlagSet, withOutput bool) *clientFlags {
	c := &clientFlags{output: "table"}
	def := os.Getenv("STRATA_COLLECTOR")
	if def == "" {
		def = defaultCollector
	}
	fs.StringVar(&c.collector, "collector", def, "collector address: host:port or unix:PATH ($STRATA_COLLECTOR)")
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

// dial connects to the collector. The connection is lazy: errors surface on
// the first call, which carries the caller's context.
func (c *clientFlags) dial() (*grpc.ClientConn, stratav1.QueryServiceClient, error) {
	cc, err := grpc.NewClient(c.collector, grpc.WithTransportCredentials(insecure.NewCredentials()))
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

// output writes rows either as an aligned table or as JSON lines.
type output struct {
	json bool
	enc  *json.Encoder
	tw   *tabwriter.Writer
}

// newOutput starts an output in format; header is the table's first line.
func newOutput(w io.Writer, format string, header ...string) *output {
	if format == "json" {
		return &output{json: true, enc: json.NewEncoder(w)}
	}
	o := &output{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(o.tw, strings.Join(header, "\t"))
	return o
}

// row writes obj as one JSON line, or cells as one table line.
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

// hex formats an address the way the kernel's tools do.
func hex(v uint64) string { return fmt.Sprintf("%#x", v) }

// enumName is a proto enum's value name without its prefix, lowercased:
// ACCESS_KIND_READ -> read.
func enumName(full, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(full, prefix))
}
