package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// Proc is a process (a collector, an agent, a Spark daemon) started in its
// own process group, so that Stop ends what it started too (a Spark
// worker's executors). Its stdout and stderr are kept for failure messages.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	out  *Output
	done chan struct{}
	err  error
}

// StartProc starts argv with env added to the environment. The caller
// owns it: Stop ends it (a test uses Daemon, which stops it at cleanup).
func StartProc(name string, env []string, argv ...string) (*Proc, error) {
	p := &Proc{Name: name, cmd: exec.Command(argv[0], argv[1:]...), out: &Output{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// Daemon is StartProc for a test: it fails the test when the process
// cannot start, and at cleanup stops it and, when the test failed, logs
// the end of its output.
func Daemon(tb testing.TB, name string, env []string, argv ...string) *Proc {
	tb.Helper()
	p, err := StartProc(name, env, argv...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Stop()
		if tb.Failed() {
			tb.Logf("--- %s output (last 4000 bytes):\n%s", name, p.Output(4000))
		}
	})
	return p
}

// PID is the process's id (its process group's too).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// CPU is the CPU time (user + system) the process has used so far, read
// from /proc/PID/stat.
func (p *Proc) CPU() (time.Duration, error) {
	proc, err := procfs.NewProc(p.PID())
	if err != nil {
		return 0, fmt.Errorf("read cpu time of %s: %w", p.Name, err)
	}
	st, err := proc.Stat()
	if err != nil {
		return 0, fmt.Errorf("read cpu time of %s: %w", p.Name, err)
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}

// Signal sends sig to the process group.
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.PID(), sig); err != nil {
		return fmt.Errorf("signal %s: %w", p.Name, err)
	}
	return nil
}

// Exited reports whether the process has ended, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Output is what the process wrote so far, at most the last n bytes.
func (p *Proc) Output(n int) string {
	s := p.out.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// Stop ends the process group: SIGTERM, then SIGKILL after 10 s. It is
// nil-safe and may be called again.
func (p *Proc) Stop() {
	if p == nil {
		return
	}
	if done, _ := p.Exited(); done {
		syscall.Kill(-p.PID(), syscall.SIGKILL) // what it left in its group
		return
	}
	syscall.Kill(-p.PID(), syscall.SIGTERM)
	syscall.Kill(-p.PID(), syscall.SIGCONT) // a stopped group handles its SIGTERM
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// WaitFor polls ok every 100 ms until it holds or timeout passes; p, when
// not nil, exiting first ends the wait with its output.
func WaitFor(what string, timeout time.Duration, p *Proc, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if p != nil {
			if done, err := p.Exited(); done {
				return fmt.Errorf("%s exited (%v) while waiting for %s:\n%s", p.Name, err, what, p.Output(4000))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// FreePort returns a loopback TCP port nobody listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Listening reports whether something accepts TCP connections at addr.
func Listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}
