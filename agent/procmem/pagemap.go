package procmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"unsafe"
)

// Entry is one /proc/PID/pagemap entry: a little-endian u64 per virtual page
// at file offset (vaddr / PageSize()) * 8 (Documentation/admin-guide/mm/pagemap.rst).
//
//	bits 0-54  PFN when present (bit 63); 0 when the opener lacks CAP_SYS_ADMIN
//	bits 0-4   swap type when swapped (bit 62)
//	bits 5-54  swap offset when swapped
//	bit  55    PTE is soft-dirty
//	bit  56    page is exclusively mapped
//	bit  57    PTE is uffd-wp write-protected
//	bit  58    PTE is a guard region (MADV_GUARD_INSTALL)
//	bits 59-60 zero
//	bit  61    page is file-backed or shared anonymous
//	bit  62    page is swapped
//	bit  63    page is present
type Entry uint64

// Pagemap entry bits.
const (
	EntrySoftDirty  Entry = 1 << 55
	EntryExclusive  Entry = 1 << 56
	EntryUffdWP     Entry = 1 << 57
	EntryGuard      Entry = 1 << 58
	EntryFileShared Entry = 1 << 61
	EntrySwapped    Entry = 1 << 62
	EntryPresent    Entry = 1 << 63

	pfnMask        = 1<<55 - 1
	swapTypeBits   = 5
	swapTypeMask   = 1<<swapTypeBits - 1
	swapOffsetMask = 1<<50 - 1
)

// Present reports bit 63.
func (e Entry) Present() bool { return e&EntryPresent != 0 }

// Swapped reports bit 62.
func (e Entry) Swapped() bool { return e&EntrySwapped != 0 }

// FileShared reports bit 61.
func (e Entry) FileShared() bool { return e&EntryFileShared != 0 }

// Exclusive reports bit 56.
func (e Entry) Exclusive() bool { return e&EntryExclusive != 0 }

// SoftDirty reports bit 55.
func (e Entry) SoftDirty() bool { return e&EntrySoftDirty != 0 }

// Status is bits 55-63: the page's state without its PFN or swap location,
// so that two pages that differ only there compare equal.
func (e Entry) Status() Entry { return e &^ pfnMask }

// Hidden reports a present page whose PFN the kernel withheld because the
// opener lacks CAP_SYS_ADMIN: bits 0-54 are zero. (PFN 0 is never a page a
// process maps.)
func (e Entry) Hidden() bool { return e&EntryPresent != 0 && uint64(e)&pfnMask == 0 }

// PFN returns bits 0-54 of a present page, else 0.
func (e Entry) PFN() uint64 {
	if !e.Present() {
		return 0
	}
	return uint64(e) & pfnMask
}

// SwapType returns bits 0-4 of a swapped page, else 0.
func (e Entry) SwapType() uint32 {
	if !e.Swapped() || e.Present() {
		return 0
	}
	return uint32(e & swapTypeMask)
}

// SwapOffset returns bits 5-54 of a swapped page, else 0.
func (e Entry) SwapOffset() uint64 {
	if !e.Swapped() || e.Present() {
		return 0
	}
	return uint64(e>>swapTypeBits) & swapOffsetMask
}

// ErrOutOfRange reports an address beyond the process's user address space.
var ErrOutOfRange = errors.New("address beyond user space")

// Pagemap is an open /proc/PID/pagemap. Open it once per use (a batch of
// ranges of one process) and Close it after: PFN visibility is decided by the
// kernel at open time.
type Pagemap struct {
	f       *os.File
	buf     []byte
	scanVec []pageRegion
}

// OpenPagemap opens /proc/PID/pagemap. A missing process gives ErrProcessGone.
func (f FS) OpenPagemap(pid int) (*Pagemap, error) {
	fd, err := os.Open(f.pidPath(pid, "pagemap"))
	if err != nil {
		return nil, fmt.Errorf("open pagemap: %w", gone(err))
	}
	return &Pagemap{f: fd}, nil
}

// Close closes the file; it is safe on a nil Pagemap.
func (p *Pagemap) Close() error {
	if p == nil || p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}

// Read fills dst with the entries of the len(dst) pages starting at the page
// that holds vaddr, with one pread. A process that exited meanwhile gives
// ErrProcessGone.
func (p *Pagemap) Read(dst []Entry, vaddr uint64) error {
	n := len(dst) * 8
	if n == 0 {
		return nil
	}
	var b []byte
	if littleEndian {
		// Entry has the file's layout on this host: read in place.
		b = unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), n)
	} else {
		if cap(p.buf) < n {
			p.buf = make([]byte, n)
		}
		b = p.buf[:n]
	}
	off := int64(vaddr / pageSize * 8)
	got, err := p.f.ReadAt(b, off)
	if got == 0 && (err == nil || errors.Is(err, io.EOF)) {
		// The kernel returns 0 bytes once the mm is gone, and also past the
		// end of the user address space; page 0 tells the two apart.
		var probe [8]byte
		if k, _ := p.f.ReadAt(probe[:], 0); k == 0 {
			return fmt.Errorf("read pagemap: %w", ErrProcessGone)
		}
		return fmt.Errorf("read pagemap: %w: %#x", ErrOutOfRange, vaddr)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("read pagemap: %w: %w", ErrProcessGone, err)
		}
		return fmt.Errorf("read pagemap: %w", err)
	}
	if got < n {
		return fmt.Errorf("read pagemap: short read of %d of %d bytes at %#x", got, n, vaddr)
	}
	if !littleEndian {
		decodeEntries(dst, b)
	}
	return nil
}

// littleEndian is true on hosts whose u64 layout is pagemap's.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// decodeEntries decodes little-endian u64 entries from b into dst; it stops
// at the shorter of the two and returns the number decoded.
func decodeEntries(dst []Entry, b []byte) int {
	n := min(len(dst), len(b)/8)
	for i := range n {
		dst[i] = Entry(binary.LittleEndian.Uint64(b[i*8:]))
	}
	return n
}
