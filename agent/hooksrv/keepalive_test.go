package hooksrv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/workload"
)

// TestKeepaliveMatchesHeader: the hook's promise (STRATA_KEEPALIVE_SEC in
// strata_hook.h) is the interval the server's idle timeout is built on.
func TestKeepaliveMatchesHeader(t *testing.T) {
	src := filepath.Join(t.TempDir(), "keepalive.c")
	prog := "#include <stdio.h>\n#include \"strata_hook.h\"\nint main(void) { printf(\"%d\\n\", STRATA_KEEPALIVE_SEC); return 0; }\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(workload.Compile(t, "keepalive", src)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), strconv.Itoa(int(KeepaliveInterval/time.Second)); got != want {
		t.Fatalf("STRATA_KEEPALIVE_SEC = %s, KeepaliveInterval = %s s", got, want)
	}
	if DefaultIdleTimeout < 4*KeepaliveInterval {
		t.Fatalf("default idle timeout %v leaves fewer than 4 keepalives of slack", DefaultIdleTimeout)
	}
}
