// Package resolvertest starts child processes whose memory layout a test
// controls, for the tests and benchmarks of the resolver and of the
// `strata resolve` command. The child is the test binary itself, re-executed
// with an environment variable, so no compiler or extra program is needed.
// Importing the package is enough: its init turns a process started by Start
// into the child before any test runs, so no TestMain is needed.
package resolvertest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const envSpec = "STRATA_RESOLVERTEST_CHILD"

// Touch says which pages of a region the child writes.
type Touch int

// Touch patterns.
const (
	TouchAll   Touch = iota // every page
	TouchHalf               // the first half of the pages
	TouchNone               // none
	TouchRead               // every page, read only (maps the shared zero page)
	TouchChurn              // every page, then forever: free them all (MADV_DONTNEED) and touch again
)

// Region is one mapping the child makes. THP regions are 2 MiB aligned and
// advised MADV_HUGEPAGE; the others are advised MADV_NOHUGEPAGE. A Hole
// region is three pages whose middle page is unmapped again.
type Region struct {
	Name  string
	Pages int
	Touch Touch
	THP   bool
	Hole  bool
}

// Child is a running child process.
type Child struct {
	Cmd   *exec.Cmd
	Pid   int
	Addr  map[string]uint64 // region name -> start address
	stdin io.WriteCloser
}

// init becomes the child, and exits, when Start launched this process.
func init() {
	if spec := os.Getenv(envSpec); spec != "" {
		if err := child(spec, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "resolvertest child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
}

// Start re-executes the test binary as a child that maps the regions and
// waits; it is stopped when the test ends. attr, when not nil, sets the
// child's credentials.
func Start(tb testing.TB, regions []Region, attr *syscall.SysProcAttr) *Child {
	tb.Helper()
	return StartBinary(tb, os.Args[0], regions, attr)
}

// StartBinary is Start with another copy of the test binary, such as the
// one PublicBinary returns.
func StartBinary(tb testing.TB, bin string, regions []Region, attr *syscall.SysProcAttr) *Child {
	tb.Helper()
	c, err := start(bin, regions, attr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

func start(bin string, regions []Region, attr *syscall.SysProcAttr) (*Child, error) {
	var spec []string
	for _, r := range regions {
		spec = append(spec, fmt.Sprintf("%s:%d:%d:%t:%t", r.Name, r.Pages, r.Touch, r.THP, r.Hole))
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), envSpec+"="+strings.Join(spec, ","))
	cmd.SysProcAttr = attr
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start child: %w", err)
	}
	c := &Child{Cmd: cmd, Pid: cmd.Process.Pid, Addr: map[string]uint64{}, stdin: in}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 1 && f[0] == "ready" {
			return c, nil
		}
		if len(f) != 2 {
			continue
		}
		a, err := strconv.ParseUint(f[1], 0, 64)
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("child said %q: %w", sc.Text(), err)
		}
		c.Addr[f[0]] = a
	}
	c.Stop()
	return nil, fmt.Errorf("child exited before it was ready: %v", sc.Err())
}

// PublicBinary copies the running test binary into a directory every user
// can enter, so that a child started with another uid can execute it (go
// test builds in a directory only its owner can enter).
func PublicBinary(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "strata-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Nobody returns process attributes that run a child as uid and gid 65534.
func Nobody() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// Stop ends the child (closing its stdin) and reaps it.
func (c *Child) Stop() {
	if c.stdin != nil {
		c.stdin.Close()
		c.stdin = nil
		_ = c.Cmd.Wait()
	}
}

// Kill kills the child without reaping it, leaving a zombie.
func (c *Child) Kill() error { return c.Cmd.Process.Kill() }

// AnonHugePages returns the AnonHugePages of the child's mapping that holds
// addr, in KiB, from /proc/PID/smaps.
func (c *Child) AnonHugePages(addr uint64) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", c.Pid))
	if err != nil {
		return 0, err
	}
	in := false
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = l <= addr && addr < h
				continue
			}
		}
		if in && f[0] == "AnonHugePages:" && len(f) >= 2 {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no mapping holds %#x", addr)
}

// Touched maps n pages in the calling process itself (4 KiB pages: no
// THP), writes each once, and returns the first one's address; the
// mapping goes when the test ends.
func Touched(tb testing.TB, n int) uint64 {
	tb.Helper()
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, n*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Munmap(mem) })
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		mem[i*ps] = 1
	}
	return uint64(uintptr(unsafe.Pointer(&mem[0])))
}

var readSink atomic.Uint32

// churn frees and re-faults mem in a loop, so that its pages are freed and
// reused while a reader looks at them.
func churn(mem []byte, ps int) {
	for {
		_ = unix.Madvise(mem, unix.MADV_DONTNEED)
		for i := 0; i < len(mem); i += ps {
			mem[i] = 1
		}
	}
}

// child maps the regions, prints "name address" lines and "ready", then
// waits for stdin to close.
func child(spec string, in io.Reader, out io.Writer) error {
	ps := os.Getpagesize()
	for _, s := range strings.Split(spec, ",") {
		var r Region
		f := strings.Split(s, ":")
		if len(f) != 5 {
			return fmt.Errorf("bad region %q", s)
		}
		r.Name = f[0]
		r.Pages, _ = strconv.Atoi(f[1])
		t, _ := strconv.Atoi(f[2])
		r.Touch = Touch(t)
		r.THP = f[3] == "true"
		r.Hole = f[4] == "true"
		if r.Hole {
			r.Pages = 3
		}
		size := r.Pages * ps
		extra := 0
		if r.THP {
			extra = 2 << 20
		}
		mem, err := unix.Mmap(-1, 0, size+extra, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("mmap %s: %w", r.Name, err)
		}
		addr := uintptr(unsafe.Pointer(&mem[0]))
		off := 0
		if r.THP {
			off = int((2<<20 - addr%(2<<20)) % (2 << 20))
		}
		mem = mem[off : off+size]
		advice := unix.MADV_NOHUGEPAGE
		if r.THP {
			advice = unix.MADV_HUGEPAGE
		}
		if err := unix.Madvise(mem, advice); err != nil {
			return fmt.Errorf("madvise %s: %w", r.Name, err)
		}
		touch := r.Pages
		switch r.Touch {
		case TouchHalf:
			touch = r.Pages / 2
		case TouchNone:
			touch = 0
		}
		var sink byte
		for i := 0; i < touch; i++ {
			if r.Touch == TouchRead {
				sink += mem[i*ps]
			} else {
				mem[i*ps] = byte(i) | 1
			}
		}
		readSink.Add(uint32(sink)) // keeps the reads from being optimised away
		if r.Touch == TouchChurn {
			go churn(mem, ps)
		}
		if r.Hole {
			if err := unix.MunmapPtr(unsafe.Pointer(&mem[ps]), uintptr(ps)); err != nil {
				return fmt.Errorf("munmap hole: %w", err)
			}
		}
		fmt.Fprintf(out, "%s %#x\n", r.Name, uintptr(unsafe.Pointer(&mem[0])))
	}
	fmt.Fprintln(out, "ready")
	_, err := io.Copy(io.Discard, in)
	return err
}
