package procmem

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestHugeRangesSelf maps 4 MiB with MADV_HUGEPAGE and 1 MiB without, and
// asks PAGEMAP_SCAN which parts are PMD-mapped.
func TestHugeRangesSelf(t *testing.T) {
	const huge = 2 << 20
	mem, err := unix.Mmap(-1, 0, 3*huge, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	base := uintptr(unsafe.Pointer(&mem[0]))
	off := int((huge - base%huge) % huge)
	thp := mem[off : off+2*huge]
	if err := unix.Madvise(thp, unix.MADV_HUGEPAGE); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(thp); i += int(pageSize) {
		thp[i] = 1
	}
	small, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(small)
	_ = unix.Madvise(small, unix.MADV_NOHUGEPAGE)
	for i := 0; i < len(small); i += int(pageSize) {
		small[i] = 1
	}

	pm, err := Default().OpenPagemap(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	start := uint64(uintptr(unsafe.Pointer(&thp[0])))
	got, err := pm.HugeRanges(nil, start, start+2*huge)
	if errors.Is(err, ErrScanUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var covered uint64
	for _, r := range got {
		if r.Start < start || r.End > start+2*huge || r.Start%huge != 0 || r.End%huge != 0 {
			t.Errorf("range %#x-%#x outside or unaligned", r.Start, r.End)
		}
		covered += r.End - r.Start
	}
	if covered == 0 {
		t.Skip("skipping: the kernel gave no THP (AnonHugePages 0)")
	}
	t.Logf("%d of %d bytes PMD-mapped", covered, 2*huge)
	s := uint64(uintptr(unsafe.Pointer(&small[0])))
	if got, err := pm.HugeRanges(nil, s, s+1<<20); err != nil || len(got) != 0 {
		t.Errorf("4 KiB pages: %v, %v; want no ranges", got, err)
	}
}
