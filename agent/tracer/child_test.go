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

	"github.com/stratatrace/strata/agent/tracer/internal/fillmark"
)

// The workload child is this test binary re-executed with childEnv set. It
// maps childPagesEnv anonymous pages and obeys one command per stdin line,
// answering "ok <thread CPU ns>" for the work the command did (a line of
// commands separated by ";" runs them all, with nothing in between):
//
//	r A B [O]     read byte O (default 0) of each page of [A,B)
//	w A B [O]     write byte O of each page of [A,B)
//	rw A B [O]    read, then write, byte O of each page of [A,B)
//	d             MADV_DONTNEED the whole mapping (pages fault again)
//	cpu N         run only on CPU N from now on
//	loop N A B M [S]  N times: touch [A,B) with mode M (r|w), then
//	              MADV_DONTNEED; with S, the k-th page touched is
//	              A + k*S mod (B-A), scattered for an odd S and B-A a power of 2
//	fr A B        read one byte of pages [A,B) of the file mapping
//	fevict        drop the file mapping's pages from memory and page cache
//	fb K          begin a fill of key K (fillmark.Begin: the fill probes' target)
//	fe S          end the innermost fill, stored when S is 1
//	marks N S     N times: fb i; fe S
//	q             exit
//
// With childFileEnv set, the child also maps that file (MADV_RANDOM, so each
// page read after fevict is one major fault) and prints its address after
// the anonymous one. The answer's second number is the major faults the
// command caused (getrusage).
const (
	childEnv      = "STRATA_TRACER_CHILD"
	childPagesEnv = "STRATA_TRACER_CHILD_PAGES"
	childFileEnv  = "STRATA_TRACER_CHILD_FILE"
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
	var fmem []byte
	var ffd int
	if path := os.Getenv(childFileEnv); path != "" {
		if ffd, err = unix.Open(path, unix.O_RDONLY, 0); err == nil {
			var st unix.Stat_t
			unix.Fstat(ffd, &st)
			fmem, err = unix.Mmap(ffd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
		}
		if err != nil {
			fmt.Println("error", err)
			return
		}
		unix.Madvise(fmem, unix.MADV_RANDOM)
	}
	fbase := uintptr(0)
	if fmem != nil {
		fbase = uintptr(unsafePointer(fmem))
	}
	fmt.Printf("ready %d %d\n", uintptr(unsafePointer(mem)), fbase)
	touch := func(a, b, off int, mode string, stride int) {
		for k := a; k < b; k++ {
			p := k
			if stride > 1 {
				p = a + (k-a)*stride%(b-a)
			}
			switch i := p*ps + off; mode {
			case "r":
				sink += mem[i]
			case "w":
				mem[i] = 1
			case "rw":
				sink += mem[i]
				mem[i] = 1
			}
		}
	}
	// run obeys one command; false for q.
	run := func(f []string) bool {
		num := func(i int) int { n, _ := strconv.Atoi(f[i]); return n }
		switch f[0] {
		case "fr":
			for p := num(1); p < num(2); p++ {
				sink += fmem[p*ps]
			}
		case "fevict":
			unix.Madvise(fmem, unix.MADV_DONTNEED)
			unix.Fadvise(ffd, 0, 0, unix.FADV_DONTNEED)
		case "r", "w", "rw":
			off := 0
			if len(f) > 3 {
				off = num(3) % ps
			}
			touch(num(1), num(2), off, f[0], 1)
		case "d":
			unix.Madvise(mem, unix.MADV_DONTNEED)
		case "cpu":
			var set unix.CPUSet
			set.Set(num(1))
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				fmt.Println("error", err)
			}
		case "loop":
			stride := 1
			if len(f) > 5 {
				stride = num(5)
			}
			for i := 0; i < num(1); i++ {
				touch(num(2), num(3), 0, f[4], stride)
				unix.Madvise(mem, unix.MADV_DONTNEED)
			}
		case "fb":
			k, _ := strconv.ParseUint(f[1], 10, 64)
			fillmark.Begin(k)
		case "fe":
			fillmark.End(num(1) == 1)
		case "marks":
			for i := 0; i < num(1); i++ {
				fillmark.Begin(uint64(i))
				fillmark.End(num(2) == 1)
			}
		case "q":
			return false
		}
		return true
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var cmds [][]string // split first: nothing allocates between commands
		for _, cmd := range strings.Split(in.Text(), ";") {
			if f := strings.Fields(cmd); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
		start, maj := threadCPU(), majorFaults()
		for _, f := range cmds {
			if !run(f) {
				return
			}
		}
		fmt.Printf("ok %d %d\n", threadCPU()-start, majorFaults()-maj)
	}
}

func threadCPU() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}

func majorFaults() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Majflt
}

type child struct {
	tb    testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	pid   uint32
	base  uint64
	fbase uint64 // file mapping, when started with a file
}

func startChild(tb testing.TB, pages int) *child { return startChildFile(tb, pages, "") }

func startChildFile(tb testing.TB, pages int, file string) *child {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", fmt.Sprintf("%s=%d", childPagesEnv, pages), childFileEnv+"="+file)
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
	if _, err := fmt.Sscanf(line, "ready %d %d", &c.base, &c.fbase); err != nil {
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
	ns, _ := c.doMajor(format, args...)
	return ns
}

// doMajor sends one command and returns its thread CPU time and the major
// faults it caused.
func (c *child) doMajor(format string, args ...any) (ns, major int64) {
	c.tb.Helper()
	fmt.Fprintf(c.in, format+"\n", args...)
	line := c.line()
	if _, err := fmt.Sscanf(line, "ok %d %d", &ns, &major); err != nil {
		c.tb.Fatalf("child: %q: %v", line, err)
	}
	return ns, major
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
