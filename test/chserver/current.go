package chserver

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

// chdbHTTP is the HTTP front of chdb that Current runs (see its docstring).
//
//go:embed chdb_http.py
var chdbHTTP []byte

// CHDBDir is where make deps installs PyPI's chdb-core (pip --target):
// $STRATA_CHDB, else .deps/chdb in the repository.
func CHDBDir() string {
	if d := os.Getenv("STRATA_CHDB"); d != "" {
		return d
	}
	return filepath.Join(testenv.RepoRoot(), ".deps", "chdb")
}

var (
	currentOnce sync.Once
	current     *Server
	currentErr  error
)

// Current returns the test binary's current ClickHouse engine: chdb
// (ClickHouse 26.9 in-process, from PyPI's chdb-core) behind the small
// HTTP front chdb_http.py, started on first use and stopped by Main. It
// speaks the HTTP interface the store uses, on one node: it has no
// cluster (Current servers skip the Distributed layout). It skips tb when
// chdb-core is not installed (make deps installs it).
func Current(tb testing.TB) *Server {
	tb.Helper()
	dir := CHDBDir()
	if _, err := os.Stat(filepath.Join(dir, "chdb", "__init__.py")); err != nil {
		tb.Skipf("skipping: chdb-core is not installed in %s (make deps installs it)", dir)
	}
	currentOnce.Do(func() { current, currentErr = startCHDB(dir) })
	if currentErr != nil {
		tb.Fatalf("chdb: %v", currentErr)
	}
	return current
}

func startCHDB(lib string) (*Server, error) {
	dir, err := os.MkdirTemp("", "strata-chdb-")
	if err != nil {
		return nil, fmt.Errorf("start chdb: %w", err)
	}
	script := filepath.Join(dir, "chdb_http.py")
	if err := os.WriteFile(script, chdbHTTP, 0o600); err != nil {
		return nil, fmt.Errorf("start chdb: %w", err)
	}
	cmd := exec.Command("python3", script, filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+lib)
	cmd.Dir = dir
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return nil, fmt.Errorf("start chdb: %w", err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start chdb: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start chdb: %w", err)
	}
	exited := make(chan error, 1)
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
	}()
	go func() { exited <- cmd.Wait() }()
	s := &Server{Dir: dir, cmd: cmd, exited: exited, NoCluster: true}
	select {
	case p := <-port:
		s.URL = "http://127.0.0.1:" + p
	case err := <-exited:
		log, _ := os.ReadFile(filepath.Join(dir, "stderr.log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chdb front exited: %v\n%s", err, tail(log, 2000))
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-exited
		os.RemoveAll(dir)
		return nil, errors.New("chdb front did not start within 60s")
	}
	v, err := s.Query(context.Background(), "SELECT version()")
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("chdb: %w", err)
	}
	s.Version = strings.TrimSpace(v)
	return s, nil
}
