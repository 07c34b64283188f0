package hooksrv

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stratatrace/strata/test/testenv"
)

// With mode 0660 and a group, the kernel lets only the group's members
// (and root) connect: real processes of another user try, as executors of
// a YARN user would.
func TestSocketGroupAndMode(t *testing.T) {
	testenv.RequireRoot(t)
	dir, err := os.MkdirTemp("", "strata-hooksock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // others may reach the socket; its own mode decides
	const gid = 4242     // "spark", say: nobody is in it unless given it
	path := filepath.Join(dir, "hook.sock")
	srv, err := Listen(Config{Path: path, Mode: 0o660, GID: gid}, HandlerFunc(func(context.Context, Event) {}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil || st.Mode&0o777 != 0o660 || st.Gid != gid {
		t.Fatalf("socket mode %o gid %d (%v); want 0660, %d", st.Mode&0o777, st.Gid, err, gid)
	}
	connect := func(groups ...uint32) string {
		return testenv.ConnectAs(t, dir, path, &syscall.Credential{Uid: 65534, Gid: 65534, Groups: groups})
	}
	if out := connect(); !strings.Contains(out, "permission denied") {
		t.Errorf("a user outside the group: %q; want permission denied", out)
	}
	if out := connect(gid); !strings.Contains(out, "connected") {
		t.Errorf("a member of the group: %q; want connected", out)
	}
	if _, err := Listen(Config{Path: path + "2", GID: -1}, HandlerFunc(func(context.Context, Event) {}), nil); err == nil {
		t.Error("negative gid accepted")
	}
}
