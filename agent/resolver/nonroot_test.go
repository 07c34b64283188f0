package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver/resolvertest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
)

// envSelf makes the test binary resolve 16 pages of its own memory, print
// the outcome as JSON and exit: TestNonRoot runs it without privileges.
const envSelf = "STRATA_RESOLVER_SELFTEST"

func init() {
	if os.Getenv(envSelf) != "" {
		if err := selfTest(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "self test:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
}

type selfReport struct {
	Euid                   int
	Pages, Present, Hidden uint64
	Warning                string
	WarnHidden, WarnFlags  bool
	Runs                   []*stratav1.PageRun
}

func selfTest(w io.Writer) error {
	const n = 16
	mem, err := unix.Mmap(-1, 0, n*int(procmem.PageSize()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	for i := 0; i < len(mem); i += int(procmem.PageSize()) {
		mem[i] = 1
	}
	r, err := New(procmem.Default(), Options{})
	if err != nil {
		return err
	}
	res, err := r.Resolve(os.Getpid(), uint64(uintptr(unsafe.Pointer(&mem[0]))), n*procmem.PageSize())
	if err != nil {
		return err
	}
	rep := selfReport{
		Euid: os.Geteuid(), Pages: res.Pages, Present: res.Present, Hidden: res.Hidden,
		WarnHidden: errors.Is(res.Warning, ErrPFNHidden), WarnFlags: errors.Is(res.Warning, ErrFlagsUnavailable),
		Runs: res.Runs,
	}
	if res.Warning != nil {
		rep.Warning = res.Warning.Error()
	}
	return json.NewEncoder(w).Encode(rep)
}

// TestNonRoot resolves memory as uid 65534: PFNs come back as 0 from the
// kernel and must be reported as hidden, with a warning, never as zeros.
func TestNonRoot(t *testing.T) {
	testenv.RequireRoot(t) // to switch to another uid
	cmd := exec.Command(resolvertest.PublicBinary(t), "-test.run=^$")
	cmd.Env = append(os.Environ(), envSelf+"=1")
	cmd.SysProcAttr = resolvertest.Nobody()
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("skipping: cannot run the test binary as uid 65534: %v", err)
	}
	var rep selfReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("as uid %d: %d pages, %d hidden, warning %q", rep.Euid, rep.Pages, rep.Hidden, rep.Warning)
	if rep.Euid != 65534 || rep.Pages != 16 || rep.Present != 16 || rep.Hidden != 16 {
		t.Fatalf("report %+v", rep)
	}
	if !rep.WarnHidden || !rep.WarnFlags {
		t.Errorf("warning %q: want both PFN and kpageflags warnings", rep.Warning)
	}
	want := uint32(stratav1.PageState_PAGE_STATE_PRESENT | stratav1.PageState_PAGE_STATE_PFN_HIDDEN | stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN)
	for _, r := range rep.Runs {
		// The node still comes from move_pages(2), which needs no privilege.
		if r.GetState()&want != want || r.GetPfn() != 0 || r.GetNumaNode() < 0 {
			t.Errorf("run %v: want state %#x, no PFN, a node", r, want)
		}
	}
}
