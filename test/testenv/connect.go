package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// connectEnv names the socket a child that ConnectAs starts dials.
const connectEnv = "STRATA_TESTENV_CONNECT"

// A test binary started by ConnectAs dials its socket, says how that went
// and exits before any test runs.
func init() {
	path := os.Getenv(connectEnv)
	if path == "" {
		return
	}
	if c, err := net.Dial("unixpacket", path); err != nil {
		fmt.Println("connect:", err)
	} else {
		c.Close()
		fmt.Println("connected")
	}
	os.Exit(0)
}

// ConnectAs connects to the Unix socket at path as the JVM hook does
// (SOCK_SEQPACKET), from a copy of the running test binary placed in dir
// (which cred's user must be able to reach) and run as cred from "/". It
// returns what the child said, "connected" or "connect: <error>", and its
// exit error, if any.
func ConnectAs(t testing.TB, dir, path string, cred *syscall.Credential) string {
	t.Helper()
	bin := filepath.Join(dir, "connect.test")
	if _, err := os.Stat(bin); err != nil {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), connectEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	return fmt.Sprint(string(out), err)
}
