package tracer

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The workload child is this test binary re-executed with childEnv set. It
// maps childPagesEnv anonymous pages and obeys one command per stdin line,
// answering "ok <thread CPU ns>" for the work the command did:
//
//	r A B         read one byte of pages [A,B)
//	w A B         write one byte of pages [A,B)
//	rw A B        read, then write, each page of [A,B)
//	d             MADV_DONTNEED the whole mapping (pages fault again)
//	loop N A B M  N times: touch [A,B) with mode M (r|w), then MADV_DONTNEED
//	q             exit
const (
	childEnv      = "STRATA_TRACER_CHILD"
	childPagesEnv = "STRATA_TRACER_CHILD_PAGES"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		runChild()
		return
	}
	os.Exit(m.Run())
}

var sink byte

func runChild() {
	runtime.LockOSThread()
	pages, _ := strconv.Atoi(os.Getenv(childPagesEnv))
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, pages*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fmt.Println("error", err)
		return
	}
	fmt.Printf("ready %d\n", uintptr(unsafePointer(mem)))
	touch := func(a, b int, mode string) {
		for p := a; p < b; p++ {
			switch mode {
			case "r":
				sink += mem[p*ps]
			case "w":
				mem[p*ps] = 1
			case "rw":
				sink += mem[p*ps]
				mem[p*ps] = 1
			}
		}
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		num := func(i int) int { n, _ := strconv.Atoi(f[i]); return n }
		start := threadCPU()
		switch f[0] {
		case "r", "w", "rw":
			touch(num(1), num(2), f[0])
		case "d":
			unix.Madvise(mem, unix.MADV_DONTNEED)
		case "loop":
			for i := 0; i < num(1); i++ {
				touch(num(2), num(3), f[4])
				unix.Madvise(mem, unix.MADV_DONTNEED)
			}
		case "q":
			return
		}
		fmt.Printf("ok %d\n", threadCPU()-start)
	}
}

func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

type child struct {
	tb   testing.TB
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	pid  uint32
	base uint64
}

func startChild(tb testing.TB, pages int) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", fmt.Sprintf("%s=%d", childPagesEnv, pages))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &child{tb: tb, cmd: cmd, in: in, out: bufio.NewScanner(outPipe), pid: uint32(cmd.Process.Pid)}
	tb.Cleanup(func() { c.quit() })
	line := c.line()
	if _, err := fmt.Sscanf(line, "ready %d", &c.base); err != nil {
		tb.Fatalf("child: %q: %v", line, err)
	}
	return c
}

func (c *child) line() string {
	if !c.out.Scan() {
		c.tb.Fatalf("child %d: no answer: %v", c.pid, c.out.Err())
	}
	return c.out.Text()
}

// do sends one command and returns the thread CPU time it took.
func (c *child) do(format string, args ...any) int64 {
	c.tb.Helper()
	fmt.Fprintf(c.in, format+"\n", args...)
	line := c.line()
	var ns int64
	if _, err := fmt.Sscanf(line, "ok %d", &ns); err != nil {
		c.tb.Fatalf("child: %q: %v", line, err)
	}
	return ns
}

// page returns the address of page i of the child's mapping.
func (c *child) page(i int) uint64 { return c.base + uint64(i*os.Getpagesize()) }

func (c *child) quit() {
	if c.cmd.ProcessState != nil {
		return
	}
	fmt.Fprintln(c.in, "q")
	c.in.Close()
	c.cmd.Wait()
}
