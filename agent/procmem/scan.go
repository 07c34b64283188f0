package procmem

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PAGEMAP_SCAN (Linux 6.7+) is an ioctl on an open /proc/PID/pagemap that
// walks page tables and returns address ranges by category, without PFNs:
//
//	struct pm_scan_arg { u64 size, flags, start, end, walk_end, vec, vec_len,
//	                     max_pages, category_inverted, category_mask,
//	                     category_anyof_mask, return_mask; }   // 96 bytes
//	struct page_region { u64 start, end, categories; }
//
// The request is _IOWR('f', 16, struct pm_scan_arg) = 0xC0606610.
const (
	pagemapScan = 0xC0606610
	pageIsHuge  = 1 << 6 // PMD-mapped THP or hugetlb
)

type pmScanArg struct {
	size, flags, start, end, walkEnd, vec, vecLen, maxPages uint64
	categoryInverted, categoryMask, categoryAnyofMask       uint64
	returnMask                                              uint64
}

type pageRegion struct{ start, end, categories uint64 }

// Range is a virtual address range [Start, End).
type Range struct{ Start, End uint64 }

// ErrScanUnsupported reports a kernel without PAGEMAP_SCAN (before 6.7);
// callers fall back to reading every entry.
var ErrScanUnsupported = errors.New("PAGEMAP_SCAN not supported")

// HugeRanges appends to dst the parts of [start, end) mapped by a PMD: a
// whole PMD-sized THP, or hugetlb. Every page of such a range belongs to one
// folio of PMD size mapped at once. It uses one PAGEMAP_SCAN ioctl per 64
// ranges found.
func (p *Pagemap) HugeRanges(dst []Range, start, end uint64) ([]Range, error) {
	if p.scanVec == nil {
		// On the heap: the kernel gets its address inside arg, which the
		// garbage collector cannot see, and heap objects do not move.
		p.scanVec = make([]pageRegion, 64)
	}
	vec := p.scanVec
	rc, err := p.f.SyscallConn()
	if err != nil {
		return dst, fmt.Errorf("scan pagemap: %w", err)
	}
	for start < end {
		arg := pmScanArg{
			size:         uint64(unsafe.Sizeof(pmScanArg{})),
			start:        start,
			end:          end,
			vec:          uint64(uintptr(unsafe.Pointer(&vec[0]))),
			vecLen:       uint64(len(vec)),
			categoryMask: pageIsHuge,
			returnMask:   pageIsHuge,
		}
		var n uintptr
		var errno unix.Errno
		if cerr := rc.Control(func(fd uintptr) {
			n, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, pagemapScan, uintptr(unsafe.Pointer(&arg)))
		}); cerr != nil {
			return dst, fmt.Errorf("scan pagemap: %w", cerr)
		}
		runtime.KeepAlive(vec)
		switch errno {
		case 0:
		case unix.ENOTTY, unix.EINVAL, unix.EOPNOTSUPP:
			return dst, fmt.Errorf("scan pagemap: %w: %w", ErrScanUnsupported, errno)
		case unix.ESRCH:
			return dst, fmt.Errorf("scan pagemap: %w: %w", ErrProcessGone, errno)
		default:
			return dst, fmt.Errorf("scan pagemap: %w", errno)
		}
		for _, r := range vec[:n] {
			dst = append(dst, Range{Start: r.start, End: r.end})
		}
		if int(n) < len(vec) || arg.walkEnd <= start {
			break
		}
		start = arg.walkEnd
	}
	return dst, nil
}
