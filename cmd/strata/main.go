// Command strata is the user's command line: it resolves addresses locally,
// queries a collector and analyses job histories.
//
// Help goes to stdout (strata help, strata -h, strata COMMAND -h) and exits
// 0. The exit status is 0 on success, 1 when the command failed, and 2 when
// it was called wrongly (an unknown command or flag, a missing or invalid
// argument): the reason and a pointer to the command's help then go to
// stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"
)

// version is set at build time (-ldflags "-X main.version=..." from git
// describe; see the Makefile).
var version = "dev"

// command is one subcommand. Each lives in its own file and registers itself
// in init; that registry is the only package-level state.
type command struct {
	name string
	// args is what follows "strata NAME" in the synopsis: "--app ID [flags]".
	args string
	// summary is the one line `strata help` lists.
	summary string
	// help is the description `strata NAME -h` prints under the synopsis:
	// a few lines, examples indented.
	help string
	run  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("strata: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks a command called wrongly: exit status 2.
var errUsage = errors.New("usage")

// usageError is a command called wrongly. main prints its reason (when the
// flag package has not already) and where the command's help is.
type usageError struct {
	cmd    string // the command's name; "" for strata itself
	reason string // "" when already printed
	helped bool   // the help itself was printed
}

func (e *usageError) Error() string {
	if e.reason == "" {
		return "usage"
	}
	return e.reason
}

// Is makes every usageError match errUsage.
func (e *usageError) Is(target error) bool { return target == errUsage }

// badUsage is the usage error of command cmd ("" for strata itself).
func badUsage(cmd, format string, a ...any) error {
	return &usageError{cmd: cmd, reason: fmt.Sprintf(format, a...)}
}

// printedUsage is the usage error whose reason the flag package printed.
func printedUsage(cmd string) error { return &usageError{cmd: cmd} }

// usage is `strata help`: the synopsis and every command's summary.
func usage(w io.Writer) {
	fmt.Fprint(w, `strata: Spark's cached blocks traced down to physical pages, queried from a Strata collector;
addresses resolved locally; Hadoop and Spark job histories analysed.

usage: strata COMMAND [flags] [arguments]
       strata COMMAND -h      help on one command (or strata help COMMAND)
       strata --version

commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, `
The commands that ask a collector take --collector HOST[:PORT] (default %s,
port %s when none is given) or $STRATA_COLLECTOR, and its credentials (--tls-ca,
--token-file or $STRATA_TOKEN). Exit status: 0 ok, 1 failed, 2 called wrongly.
`, defaultCollector, defaultCollectorPort)
}

// commandHelp is `strata NAME -h`: synopsis, description and flags.
func commandHelp(w io.Writer, c command, flags func(io.Writer)) {
	fmt.Fprintf(w, "usage: strata %s %s\n\n", c.name, c.args)
	fmt.Fprintf(w, "%s\n", strings.TrimSpace(firstUpper(c.summary)+"."))
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.help, "\n"))
	}
	if flags != nil {
		fmt.Fprintln(w, "\nflags:")
		flags(w)
	}
}

// firstUpper capitalises s's first letter.
func firstUpper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitStatus(err, os.Stderr))
}

// exitStatus prints err to stderr and returns the exit status: 0 without
// an error, 2 for a usage error (with where the help is), 1 otherwise.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) || errors.Is(err, errUsage) {
		prog := "strata"
		if ue != nil && ue.cmd != "" {
			prog += " " + ue.cmd
		}
		if ue != nil && ue.reason != "" {
			fmt.Fprintf(stderr, "%s: %s\n", prog, ue.reason)
		}
		if ue == nil || !ue.helped {
			fmt.Fprintf(stderr, "Run '%s -h' for usage.\n", prog)
		}
		return 2
	}
	fmt.Fprintln(stderr, "strata:", err)
	return 1
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return &usageError{helped: true}
	}
	switch a := args[0]; {
	case isHelp(a):
		usage(stdout)
		return nil
	case a == "help":
		if len(args) == 1 {
			usage(stdout)
			return nil
		}
		if _, ok := commands[args[1]]; !ok {
			return badUsage("", "help: unknown command %q", args[1])
		}
		return commands[args[1]].run(ctx, []string{"-h"}, stdout, stderr)
	case a == "--version" || a == "-version" || a == "version":
		_, err := fmt.Fprintf(stdout, "strata %s %s\n", version, runtime.Version())
		return err
	}
	c, ok := commands[args[0]]
	if !ok {
		return badUsage("", "unknown command %q", args[0])
	}
	return c.run(ctx, args[1:], stdout, stderr)
}
