package procmem

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stratatrace/strata/test/testenv"
)

// BenchmarkKPageRead measures what DefaultMergeGap trades: the cost of one
// more kpageflags pread against that of one more entry read through a
// hole, on the PFNs of 16 MiB of this process's 4 KiB pages. break-even-gap
// is how many entries cost as much as a pread.
func BenchmarkKPageRead(b *testing.B) {
	testenv.RequireRoot(b)
	const pages = 4096
	mem, err := unix.Mmap(-1, 0, pages*int(pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
	for i := 0; i < len(mem); i += int(pageSize) {
		mem[i] = 1
	}
	pm, err := Default().OpenPagemap(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	defer pm.Close()
	ents := make([]Entry, pages)
	if err := pm.Read(ents, uint64(uintptr(unsafe.Pointer(&mem[0])))); err != nil {
		b.Fatal(err)
	}
	k, err := Default().OpenKPages()
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	one, many := make([]uint64, 1), make([]uint64, 512)
	var single, bulk time.Duration
	for b.Loop() {
		t0 := time.Now()
		for _, e := range ents[:256] {
			if err := k.ReadFlags(one, e.PFN()); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for _, e := range ents[256:264] {
			if err := k.ReadFlags(many, e.PFN()); err != nil {
				b.Fatal(err)
			}
		}
		single, bulk = single+t1.Sub(t0), bulk+time.Since(t1)
	}
	entry := float64(bulk.Nanoseconds()) / float64(b.N*8*512)
	pread := float64(single.Nanoseconds())/float64(b.N*256) - entry
	b.ReportMetric(entry, "ns/entry")
	b.ReportMetric(pread, "ns/pread")
	b.ReportMetric(pread/entry, "break-even-gap")
	b.ReportMetric(0, "ns/op")
}
