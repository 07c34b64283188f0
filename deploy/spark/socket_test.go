package spark

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/agent/hooksrv"
	"github.com/stratatrace/strata/test/testenv"
)

// TestSocketThroughReadOnlyMount: an executor's user (uid 185, Spark's
// image user, no capabilities) connects to the agent's hook socket through
// a read-only bind mount of the socket's directory, as the pod template,
// the Spark Operator example and the chart's spark-defaults mount it. The
// agent's own socket server accepts the session. Two controls keep the
// test honest: root cannot create a file through the mount (it is
// read-only), and once the socket's mode denies others write permission
// the same connect is refused (connect(2) checks the socket inode's write
// bit, not the mount).
func TestSocketThroughReadOnlyMount(t *testing.T) {
	testenv.RequireRoot(t)
	tmp := func(pattern string) string {
		dir, err := os.MkdirTemp("", pattern)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		os.Chmod(dir, 0o755) // others may reach what is inside
		return dir
	}
	host := tmp("strata-run")
	sock := filepath.Join(host, "hook.sock")
	srv, err := hooksrv.Listen(hooksrv.Config{Path: sock, Mode: 0o666}, hooksrv.HandlerFunc(func(context.Context, hooksrv.Event) {}),
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	// The executor's view of the host directory, read-only.
	pod := tmp("strata-executor")
	if err := unix.Mount(host, pod, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(pod, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", pod, err)
		}
	})
	if err := unix.Mount("", pod, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	if err := os.WriteFile(filepath.Join(pod, "probe"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("root creating a file through the mount: %v; want a read-only file system", err)
	}

	// The executor: uid 185 connecting through the read-only mount.
	bins := tmp("strata-executor-bin")
	executor := func() string {
		return testenv.ConnectAs(t, bins, filepath.Join(pod, "hook.sock"), &syscall.Credential{Uid: 185, Gid: 185})
	}
	if out := executor(); !strings.Contains(out, "connected") {
		t.Fatalf("uid 185 through the read-only mount: %q; want connected", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().Sessions != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's server saw %d sessions, want 1", srv.Stats().Sessions)
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := os.Chmod(sock, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := executor(); !strings.Contains(out, "permission denied") {
		t.Errorf("uid 185 with the socket at mode 0644: %q; want permission denied", out)
	}
}
