package procmem

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseProcStat(t *testing.T) {
	// A command with spaces and a ')' of its own, as a JVM thread may name itself.
	b := []byte("4242 (java (main) x) S 1 4242 4242 0 -1 4194560 1500 30 7 2 250 40 5 1 30 10 61 0 12345 0 0\n")
	got, err := parseProcStat(b)
	want := ProcStat{MinorFaults: 1500, MajorFaults: 7, UTime: 250, STime: 40, Nice: 10}
	if err != nil || got != want {
		t.Fatalf("parseProcStat = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{"", "4242 java S 1", "1 (x) S 1 2 3", "1 (x) S 1 1 1 0 -1 0 a 0 0 0 0 0 0 0 0 0 0",
		"1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 z 1"} {
		if _, err := parseProcStat([]byte(bad)); !errors.Is(err, ErrBadStat) {
			t.Errorf("parseProcStat(%q): %v, want ErrBadStat", bad, err)
		}
	}
}

func TestParseTaskSched(t *testing.T) {
	b := []byte("java (4250, #threads: 31)\n-------------------\nse.exec_start : 1.5\nse.nr_migrations : 12\nnr_switches : 3456\nnr_voluntary_switches : 3000\n")
	got, err := parseTaskSched(b)
	if err != nil || got != (TaskSched{Switches: 3456, Migrations: 12}) {
		t.Fatalf("parseTaskSched = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "nr_switches : 1\n", "nr_switches : x\nse.nr_migrations : 1\n"} {
		if _, err := parseTaskSched([]byte(bad)); !errors.Is(err, ErrBadStat) {
			t.Errorf("parseTaskSched(%q): %v, want ErrBadStat", bad, err)
		}
	}
}

// TestProcStatSelf reads this process: the faults it makes are counted.
func TestProcStatSelf(t *testing.T) {
	fs := Default()
	before, err := fs.ProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A fresh mapping: heap memory may be pages an earlier test (or -count
	// iteration) already faulted in.
	ps := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 256*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	unix.Madvise(mem, unix.MADV_NOHUGEPAGE) // one fault per page
	for i := 0; i < len(mem); i += ps {
		mem[i] = 1
	}
	after, err := fs.ProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.MinorFaults-before.MinorFaults < 256 {
		t.Errorf("minor faults %d -> %d after touching 256 new pages", before.MinorFaults, after.MinorFaults)
	}
	if _, err := fs.TaskSched(os.Getpid(), os.Getpid()); err != nil {
		t.Errorf("TaskSched(self): %v", err)
	}
	// A thread's own nice value (Linux keeps it per thread).
	tid, done := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, 7); err != nil {
			t.Error(err)
		}
		tid <- unix.Gettid()
		<-done
	}()
	id := <-tid
	st, err := fs.TaskStat(os.Getpid(), id)
	close(done)
	if err != nil || st.Nice != 7 {
		t.Errorf("TaskStat of a thread at nice 7: %+v, %v", st, err)
	}
	if _, err := fixture.ProcStat(os.Getpid()); !errors.Is(err, ErrProcessGone) {
		t.Errorf("ProcStat(self) under the fixture: %v, want ErrProcessGone", err)
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 100 0 2 0 5 3 0 0 20 0 1 0 9 0 0\n"))
	f.Add([]byte("1 ()) S"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := parseProcStat(b); err != nil && !errors.Is(err, ErrBadStat) {
			t.Fatalf("error not ErrBadStat: %v", err)
		}
	})
}

func FuzzParseTaskSched(f *testing.F) {
	f.Add([]byte("se.nr_migrations : 1\nnr_switches : 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := parseTaskSched(b); err != nil && !errors.Is(err, ErrBadStat) {
			t.Fatalf("error not ErrBadStat: %v", err)
		}
	})
}
