package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stratatrace/strata/test/testenv"
)

// CFlags are the gcc flags every hook C source builds with (the JNI
// library's: warnings are errors, only the small API is visible).
var CFlags = []string{"-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2", "-fvisibility=hidden"}

// Compile builds the C sources (paths relative to the repository root, or
// absolute) together with jvmhook/native/frame.c into an executable named
// name in a temporary directory, and returns its path. It skips the test
// when gcc is missing and fails it when gcc fails.
func Compile(tb testing.TB, name string, sources ...string) string {
	tb.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		tb.Skipf("skipping: gcc not found, cannot build %s: %v", name, err)
	}
	root := testenv.RepoRoot()
	out := filepath.Join(tb.TempDir(), name)
	args := append([]string{}, CFlags...)
	args = append(args,
		"-I", filepath.Join(root, "jvmhook", "include"),
		"-I", filepath.Join(root, "jvmhook", "native"),
		"-o", out)
	for _, s := range append(sources, "jvmhook/native/frame.c") {
		if !filepath.IsAbs(s) {
			s = filepath.Join(root, s)
		}
		args = append(args, s)
	}
	cmd := exec.Command(gcc, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s %v\n%s", name, err, gcc, args, msg)
	}
	return out
}

// Build compiles test/workload/regions.c and returns the executable's path.
func Build(tb testing.TB) string {
	tb.Helper()
	return Compile(tb, "regions", "test/workload/regions.c")
}

// Options are the workload's command-line flags.
type Options struct {
	Socket     string // hook socket path; empty: $STRATA_HOOK_SOCKET or the default
	AppID      string // required
	ExecutorID string // required
	RDD        int    // RDD id of the three blocks; 0 means the workload's default 7
	ForeignPID int    // > 0: also claim a range for this pid (must be rejected)
	Duration   time.Duration
	// Keepalive is how often the idle workload sends DROPPED; 0 means the
	// hook's interval (STRATA_KEEPALIVE_SEC).
	Keepalive time.Duration
	// Wrap runs the workload under a command, e.g. {"unshare", "--pid",
	// "--fork"}; Process.PID is then the wrapper's pid.
	Wrap []string
}

func (o Options) args() []string {
	a := []string{"--app", o.AppID, "--executor", o.ExecutorID}
	if o.Socket != "" {
		a = append(a, "--socket", o.Socket)
	}
	if o.RDD > 0 {
		a = append(a, "--rdd", strconv.Itoa(o.RDD))
	}
	if o.ForeignPID > 0 {
		a = append(a, "--foreign-pid", strconv.Itoa(o.ForeignPID))
	}
	if o.Keepalive > 0 {
		a = append(a, "--keepalive-ms", strconv.Itoa(int(max(o.Keepalive/time.Millisecond, 1))))
	}
	if o.Duration > 0 {
		a = append(a, "--duration", strconv.Itoa(int((o.Duration+time.Second-1)/time.Second)))
	}
	return a
}

// Region is one JSON line the workload prints per block.
type Region struct {
	Block        string `json:"block"` // Spark block name, rdd_<rdd>_<partition>
	HookBlockID  uint64 `json:"hook_block_id"`
	RDD          int32  `json:"rdd"`
	Partition    int32  `json:"partition"`
	PID          int    `json:"pid"`
	Vaddr        uint64 `json:"vaddr"`
	Length       uint64 `json:"length"`
	PageSize     uint64 `json:"page_size"`
	Pages        uint64 `json:"pages"`
	TouchedPages uint64 `json:"touched_pages"`
	Touch        string `json:"touch"` // "all", or "even": pages 0, 2, 4, ... only
	THP          bool   `json:"thp"`   // 2 MiB aligned and MADV_HUGEPAGE
}

// Touched reports whether page i of the region was written.
func (r Region) Touched(i uint64) bool { return r.Touch != "even" || i%2 == 0 }

// Foreign is the line printed with --foreign-pid.
type Foreign struct {
	ClaimedPID       int    `json:"claimed_pid"`
	HookBlockID      uint64 `json:"hook_block_id"`       // REGISTER claiming ClaimedPID
	MovedHookBlockID uint64 `json:"moved_hook_block_id"` // MOVE claiming ClaimedPID
}

// Done is the last line: the encoder's counters.
type Done struct {
	Sent    uint64 `json:"sent"`
	Dropped uint64 `json:"dropped"`
}

// line is one of the workload's output lines, told apart by its keys.
type line struct {
	kind string // "region", "foreign", "ready", "done"
	raw  []byte
}

func parseLine(b []byte) (line, error) {
	var keys struct {
		Block   string `json:"block"`
		Foreign bool   `json:"foreign"`
		Ready   bool   `json:"ready"`
		Done    bool   `json:"done"`
	}
	if err := json.Unmarshal(b, &keys); err != nil {
		return line{}, fmt.Errorf("parse workload line: %w", err)
	}
	l := line{raw: bytes.Clone(b)}
	switch {
	case keys.Block != "":
		l.kind = "region"
	case keys.Foreign:
		l.kind = "foreign"
	case keys.Ready:
		l.kind = "ready"
	case keys.Done:
		l.kind = "done"
	}
	return l, nil
}

// Process is a running workload.
type Process struct {
	Cmd     *exec.Cmd
	PID     int
	Regions []Region
	Foreign *Foreign // set with Options.ForeignPID

	stdin  io.WriteCloser
	lines  chan line
	stderr *bytes.Buffer
	once   sync.Once
	done   Done
	err    error
}

// Start runs bin with opt and waits (up to 30 s) until it printed its
// regions. The process is stopped when the test ends.
func Start(tb testing.TB, bin string, opt Options) *Process {
	tb.Helper()
	p, err := start(bin, opt)
	if err != nil {
		tb.Fatalf("start workload: %v", err)
	}
	tb.Cleanup(func() { p.Stop() })
	return p
}

func start(bin string, opt Options) (*Process, error) {
	argv := append(append(append([]string{}, opt.Wrap...), bin), opt.args()...)
	p := &Process{Cmd: exec.Command(argv[0], argv[1:]...), lines: make(chan line, 16), stderr: &bytes.Buffer{}}
	p.Cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = p.Cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("pipe stdin: %w", err)
	}
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("pipe stdout: %w", err)
	}
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("run workload: %w", err)
	}
	p.PID = p.Cmd.Process.Pid
	go p.read(stdout)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				_, werr := p.Stop()
				return nil, fmt.Errorf("workload exited before ready: %w", werr)
			}
			switch l.kind {
			case "ready":
				return p, nil
			case "foreign":
				p.Foreign = &Foreign{}
				err = json.Unmarshal(l.raw, p.Foreign)
			case "region":
				var r Region
				err = json.Unmarshal(l.raw, &r)
				p.Regions = append(p.Regions, r)
			}
			if err != nil {
				p.Cmd.Process.Kill()
				p.Stop()
				return nil, fmt.Errorf("parse workload output: %w", err)
			}
		case <-timeout:
			p.Cmd.Process.Kill()
			p.Stop()
			return nil, errors.New("workload not ready after 30s")
		}
	}
}

func (p *Process) read(stdout io.Reader) {
	defer close(p.lines)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		l, err := parseLine(sc.Bytes())
		if err != nil {
			continue
		}
		if l.kind == "done" {
			json.Unmarshal(l.raw, &p.done)
		}
		p.lines <- l
	}
}

// Stop closes the workload's stdin, so it FREEs its blocks and exits, and
// waits for it. It returns the workload's last counters and an error when
// it did not exit 0 (with its stderr). Stop may be called more than once.
func (p *Process) Stop() (Done, error) {
	p.once.Do(func() {
		p.stdin.Close()
		for range p.lines {
		}
		if err := p.Cmd.Wait(); err != nil {
			p.err = fmt.Errorf("wait workload: %w: %s", err, bytes.TrimSpace(p.stderr.Bytes()))
		}
	})
	return p.done, p.err
}

// ReadWord reads the 8 bytes at addr from the workload's memory through
// /proc/PID/mem (the caller needs ptrace access: its parent or root).
func (p *Process) ReadWord(addr uint64) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", p.PID))
	if err != nil {
		return 0, fmt.Errorf("open mem: %w", err)
	}
	defer f.Close()
	var b [8]byte
	if _, err := f.ReadAt(b[:], int64(addr)); err != nil {
		return 0, fmt.Errorf("read mem at %#x: %w", addr, err)
	}
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56, nil
}
