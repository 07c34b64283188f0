package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func init() {
	register(command{name: "hook-opts", args: "[--dir DIR] [--socket PATH]", summary: "print the JVM options that load the Strata hook",
		run: runHookOpts, help: `Prints the JVM options that load the hook, for example
  spark-submit --conf spark.executor.extraJavaOptions="$(strata hook-opts)" \
               --conf spark.driver.extraJavaOptions="$(strata hook-opts)" ...`})
}

// Files of an installed hook, as make build puts them in bin/jvmhook/.
const (
	hookJar = "strata-hook.jar"
	hookLib = "libstratahook.so"
	// hookDirEnv names the folder holding both files.
	hookDirEnv = "STRATA_HOOK_DIR"
	// hookSystemDir is where packages and node images install them.
	hookSystemDir = "/opt/strata/jvmhook"
)

// hookDirs lists where hook-opts looks for the hook files, in order.
func hookDirs(flagDir string) []string {
	if flagDir != "" {
		return []string{flagDir}
	}
	var dirs []string
	if d := os.Getenv(hookDirEnv); d != "" {
		dirs = append(dirs, d)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dirs = append(dirs, filepath.Join(filepath.Dir(exe), "jvmhook"))
		}
	}
	return append(dirs, hookSystemDir)
}

// hookOptions returns the JVM option for the hook files in dir: the native
// library as the JVMTI agent, told where the jar and the socket are (it puts
// the jar on the class path and starts the Java side itself).
func hookOptions(dir, socket string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find hook files: %w", err)
	}
	jar, lib := filepath.Join(abs, hookJar), filepath.Join(abs, hookLib)
	for _, f := range []string{jar, lib} {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("find hook files: %w", err)
		}
	}
	// Spark splits extraJavaOptions on whitespace; the agent splits its
	// options on commas and '='.
	for _, s := range []string{abs, socket} {
		if strings.ContainsAny(s, " \t\n,=\"'") {
			return "", fmt.Errorf("hook options: path %q has a space, comma, '=' or quote", s)
		}
	}
	args := "jar=" + jar
	if socket != "" {
		args += ",socket=" + socket
	}
	return fmt.Sprintf("-agentpath:%s=%s", lib, args), nil
}

func runHookOpts(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata hook-opts", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory `DIR` holding "+hookJar+" and "+hookLib+
		" (default: $"+hookDirEnv+", then jvmhook/ beside this binary, then "+hookSystemDir+")")
	socket := fs.String("socket", "", "`PATH` of the agent's hook socket, when not the hook's default "+
		"($STRATA_HOOK_SOCKET in the JVM, else /run/strata/hook.sock)")
	if ok, err := parseFlags(fs, args, stdout, stderr); !ok {
		return err
	}
	if fs.NArg() != 0 {
		return badUsage("hook-opts", "unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	for _, d := range hookDirs(*dir) {
		opts, err := hookOptions(d, *socket)
		if err == nil {
			_, err = fmt.Fprintln(stdout, opts)
			return err
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("hook-opts: no hook files: %w", errors.Join(errs...))
}
