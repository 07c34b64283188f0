package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/cpupolicy"
)

// preflight prepares the node for the agent before Run: the threads'
// scheduling policy, a warning when the hook session cap leaves too few
// file descriptors, and the JVM hook files copied where executors load
// them (--install-hook).
func preflight(cfg config.Config, log *slog.Logger) error {
	if err := cpupolicy.Set(cfg.CPUPolicy == config.CPUBatch, cfg.Nice); err != nil {
		log.Warn("threads keep their scheduling policy", "err", err) // only what the agent costs changes
	}
	warnFDs(cfg, log)
	if cfg.HookInstallDir == "" {
		return nil
	}
	if err := installHook(cfg.HookFilesDir, cfg.HookInstallDir); err != nil {
		return err
	}
	log.Info("JVM hook files installed", "dir", cfg.HookInstallDir)
	return nil
}

// warnFDs says when the hook session cap leaves too few file descriptors
// for the spool, the collector stream and /proc reads.
func warnFDs(cfg config.Config, log *slog.Logger) {
	const reserve = 256
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if lim.Cur < uint64(cfg.Hook.MaxSessions)+reserve {
		log.Warn("open file limit is close to the hook session cap; lower --hook-max-sessions or raise RLIMIT_NOFILE",
			"nofile", lim.Cur, "hook_max_sessions", cfg.Hook.MaxSessions, "reserve", reserve)
	}
}

// hookFiles are what executors load (strata hook-opts names them).
var hookFiles = []string{"strata-hook.jar", "libstratahook.so"}

// installHook copies the hook files from src into dst, each through a
// temporary file and a rename, so an executor starting meanwhile loads
// the old file or the new one, never half of one.
func installHook(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("install hook: %w", err)
	}
	for _, name := range hookFiles {
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return fmt.Errorf("install hook: %w", err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-"+filepath.Base(dst))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
