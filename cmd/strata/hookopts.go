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
	register(command{name: "hook-opts", args: "[--install-hook DIR] [--hook-socket PATH] [--remote | --ship]", summary: "print the JVM options that load the Strata hook",
		run: runHookOpts, help: `Prints the JVM options that load the hook, for example
  spark-submit --conf spark.executor.extraJavaOptions="$(strata hook-opts)" \
               --conf spark.driver.extraJavaOptions="$(strata hook-opts)" ...

--install-hook and --hook-socket are the agent's flags of the same names: the
directory the agent installs the hook files into, and its hook socket.

With --remote it names the files where the workers have them (--install-hook,
default ` + hookSystemDir + `) without looking for them here: a gateway host need not have them.

With --ship (YARN only) it prints spark-submit arguments that send this host's files with
the job through YARN's distributed cache and load them from each container's working
directory, so no NodeManager needs them installed:
  spark-submit --master yarn $(strata hook-opts --ship) ...
A job's own spark.yarn.dist.files (--files) replaces the shipped list: join the two.
--ship refuses any --master but yarn: a standalone worker or Kubernetes starts the
executor's JVM before the executor fetches spark.files into its working directory,
so that JVM finds no hook library to load.`})
}

// Files of an installed hook, as make build puts them in bin/jvmhook/.
const (
	hookJar = "strata-hook.jar"
	hookLib = "libstratahook.so"
	// hookDirEnv names the folder holding both files: the agent's variable
	// for --install-hook; oldHookDirEnv is its deprecated name here.
	hookDirEnv    = "STRATA_HOOK_INSTALL_DIR"
	oldHookDirEnv = "STRATA_HOOK_DIR"
	// hookSystemDir is where packages and node images install them.
	hookSystemDir = "/opt/strata/jvmhook"
)

// hookDirs lists where hook-opts looks for the hook files, in order.
func hookDirs(flagDir string, stderr io.Writer) []string {
	if flagDir != "" {
		return []string{flagDir}
	}
	var dirs []string
	if d := os.Getenv(hookDirEnv); d != "" {
		dirs = append(dirs, d)
	} else if d := os.Getenv(oldHookDirEnv); d != "" {
		fmt.Fprintf(stderr, "strata hook-opts: $%s is deprecated: use $%s, as the agent names it\n", oldHookDirEnv, hookDirEnv)
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
	if err := hookFilesIn(abs); err != nil {
		return "", err
	}
	return agentPath(abs, socket)
}

// hookFilesIn checks that dir holds both hook files.
func hookFilesIn(dir string) error {
	for _, f := range []string{hookJar, hookLib} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("find hook files: %w", err)
		}
	}
	return nil
}

// agentPath is the -agentpath option for the hook files in dir (absolute,
// or "." for the JVM's working directory), not looked for.
func agentPath(dir, socket string) (string, error) {
	if err := plainPaths(dir, socket); err != nil {
		return "", err
	}
	args := "jar=" + dir + "/" + hookJar
	if socket != "" {
		args += ",socket=" + socket
	}
	return fmt.Sprintf("-agentpath:%s/%s=%s", dir, hookLib, args), nil
}

// plainPaths refuses paths the options cannot carry: Spark splits
// extraJavaOptions (and spark-submit's arguments) on whitespace, the agent
// splits its options on commas and '='.
func plainPaths(paths ...string) error {
	for _, p := range paths {
		if strings.ContainsAny(p, " \t\n,=\"'") {
			return fmt.Errorf("hook options: path %q has a space, comma, '=' or quote", p)
		}
	}
	return nil
}

// shipElsewhere says why --ship cannot serve a master but YARN's: YARN
// localizes spark.yarn.dist.files into the container's working directory
// before it starts the JVM; a standalone worker starts the executor's JVM
// in its directory (work/APP/EXECUTOR) and the executor fetches spark.files
// there itself, once running, after the JVM has looked for -agentpath's
// library (Kubernetes executors fetch them the same way).
const shipElsewhere = "only YARN puts shipped files in an executor's working directory before its JVM starts " +
	"(a standalone or Kubernetes executor fetches spark.files there itself, after its JVM looked for the hook library); " +
	"install the files on the workers and use --install-hook DIR or --remote"

// shipArgs are spark-submit arguments that ship the hook files in dir with
// a YARN job and load them from each container's working directory (YARN
// localizes them there before the container's JVM starts): the files in
// spark.yarn.dist.files, the options in the executors' defaultJavaOptions
// (Spark >= 3.0), which a job's own extraJavaOptions add to.
func shipArgs(dir, socket string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find hook files: %w", err)
	}
	if err := hookFilesIn(abs); err != nil {
		return "", err
	}
	if err := plainPaths(abs); err != nil {
		return "", err
	}
	opts, err := agentPath(".", socket)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("--conf spark.yarn.dist.files=%s,%s --conf spark.executor.defaultJavaOptions=%s",
		filepath.Join(abs, hookJar), filepath.Join(abs, hookLib), opts), nil
}

func runHookOpts(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata hook-opts", flag.ContinueOnError)
	dir := fs.String("install-hook", "", "directory `DIR` holding "+hookJar+" and "+hookLib+", where the agent's --install-hook puts them"+
		" (default: $"+hookDirEnv+", then jvmhook/ beside this binary, then "+hookSystemDir+")")
	oldFlag(fs, stderr, "dir", "install-hook")
	socket := fs.String("hook-socket", "", "`PATH` of the agent's hook socket (the agent's --hook-socket), when not the hook's default "+
		"($STRATA_HOOK_SOCKET in the JVM, else /run/strata/hook.sock)")
	oldFlag(fs, stderr, "socket", "hook-socket")
	remote := fs.Bool("remote", false, "name the files where the workers have them (--install-hook, default "+hookSystemDir+") without looking for them here")
	ship := fs.Bool("ship", false, "YARN: print spark-submit arguments that ship this host's files with the job")
	master := fs.String("master", "", "`URL` of the job's master, as spark-submit's --master; --ship refuses any but yarn")
	if ok, err := parseFlags(fs, args, stdout, stderr); !ok {
		return err
	}
	if fs.NArg() != 0 {
		return badUsage("hook-opts", "unexpected argument %q", fs.Arg(0))
	}
	if *remote && *ship {
		return badUsage("hook-opts", "--remote and --ship exclude each other")
	}
	if *ship && *master != "" && *master != "yarn" {
		return badUsage("hook-opts", "--ship needs --master yarn, not %s: %s", *master, shipElsewhere)
	}
	if *remote {
		d := *dir
		if d == "" {
			d = hookSystemDir
		}
		if !filepath.IsAbs(d) {
			return badUsage("hook-opts", "--remote needs an absolute --install-hook, the workers' path: %q", d)
		}
		opts, err := agentPath(filepath.Clean(d), *socket)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, opts)
		return err
	}
	build := hookOptions
	if *ship {
		build = shipArgs
	}
	var errs []error
	for _, d := range hookDirs(*dir, stderr) {
		opts, err := build(d, *socket)
		if err == nil {
			_, err = fmt.Fprintln(stdout, opts)
			return err
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("hook-opts: no hook files: %w", errors.Join(errs...))
}
