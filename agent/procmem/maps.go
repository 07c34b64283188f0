package procmem

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/prometheus/procfs"
)

// VMA is one mapping of /proc/PID/maps: [Start, End).
type VMA struct {
	Start, End uint64
	Path       string // file or pseudo-path ([heap], [stack]); "" for anonymous (and from VMAAt)
	// PageSize is the size of the pages the kernel maps it with: the
	// hugetlb page size for a hugetlbfs mapping, else PageSize(). 0 when
	// unknown (VMAAt without PROCMAP_QUERY, and Maps).
	PageSize uint64
}

// Maps reads /proc/PID/maps with procfs and returns the mappings sorted by
// address. A missing process gives ErrProcessGone.
func (f FS) Maps(pid int) ([]VMA, error) {
	pfs, err := procfs.NewFS(f.Proc)
	if err != nil {
		return nil, fmt.Errorf("open procfs: %w", err)
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return nil, fmt.Errorf("open process: %w", gone(err))
	}
	ms, err := p.ProcMaps()
	if err != nil {
		return nil, fmt.Errorf("read maps: %w", gone(err))
	}
	out := make([]VMA, 0, len(ms))
	for _, m := range ms {
		out = append(out, VMA{Start: uint64(m.StartAddr), End: uint64(m.EndAddr), Path: m.Pathname})
	}
	slices.SortFunc(out, func(a, b VMA) int { return cmp.Compare(a.Start, b.Start) })
	return out, nil
}

// Covering returns the index of the first VMA in sorted vmas whose End is
// above addr (it may start above addr too), or len(vmas).
func Covering(vmas []VMA, addr uint64) int {
	i, _ := slices.BinarySearchFunc(vmas, addr, func(v VMA, a uint64) int {
		if v.End <= a {
			return -1
		}
		return 1
	})
	return i
}

// PROCMAP_QUERY (Linux 6.11+) is an ioctl on an open /proc/PID/maps that
// returns the VMA covering an address, or the next one above it, without
// formatting the whole file as text:
//
//	struct procmap_query { u64 size, query_flags, query_addr, vma_start,
//	    vma_end, vma_flags, vma_page_size, vma_offset, inode;
//	    u32 dev_major, dev_minor, vma_name_size, build_id_size;
//	    u64 vma_name_addr, build_id_addr; }          // 104 bytes
//
// The request is _IOWR('f', 17, struct procmap_query) = 0xC0686611.
type procmapQuery struct {
	size, queryFlags, queryAddr, vmaStart, vmaEnd, vmaFlags uint64
	vmaPageSize, vmaOffset, inode                           uint64
	devMajor, devMinor, vmaNameSize, buildIDSize            uint32
	vmaNameAddr, buildIDAddr                                uint64
}

const (
	procmapQueryIoctl = 0xC0000000 | uint32(unsafe.Sizeof(procmapQuery{}))<<16 | 'f'<<8 | 17
	coveringOrNextVMA = 0x10
)

// MapsFile answers "which mapping holds this address" for one process. Open
// it once per batch of lookups and Close it after.
type MapsFile struct {
	f       *os.File
	fs      FS
	pid     int
	noQuery bool  // the kernel lacks PROCMAP_QUERY: search vmas instead
	vmas    []VMA // read with Maps on first need when noQuery
	loaded  bool
}

// OpenMaps opens /proc/PID/maps. A missing process gives ErrProcessGone.
func (f FS) OpenMaps(pid int) (*MapsFile, error) {
	fd, err := os.Open(f.pidPath(pid, "maps"))
	if err != nil {
		return nil, fmt.Errorf("open maps: %w", gone(err))
	}
	return &MapsFile{f: fd, fs: f, pid: pid}, nil
}

// Close closes the file; it is safe on a nil MapsFile.
func (m *MapsFile) Close() error {
	if m == nil || m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	return err
}

// VMAAt returns the mapping that covers addr or, when none does, the first
// one above it; ok is false when no mapping lies at or above addr. It uses
// one PROCMAP_QUERY ioctl per call; on kernels without it, it reads the
// whole file once with Maps and searches that.
func (m *MapsFile) VMAAt(addr uint64) (v VMA, ok bool, err error) {
	if !m.noQuery {
		v, ok, err = m.query(addr)
		if !errors.Is(err, errNoQuery) {
			return v, ok, err
		}
		m.noQuery = true
	}
	if !m.loaded {
		if m.vmas, err = m.fs.Maps(m.pid); err != nil {
			return VMA{}, false, err
		}
		m.loaded = true
	}
	i := Covering(m.vmas, addr)
	if i == len(m.vmas) {
		return VMA{}, false, nil
	}
	return m.vmas[i], true, nil
}

var errNoQuery = errors.New("PROCMAP_QUERY not supported")

func (m *MapsFile) query(addr uint64) (VMA, bool, error) {
	q := procmapQuery{queryFlags: coveringOrNextVMA, queryAddr: addr}
	q.size = uint64(unsafe.Sizeof(q))
	rc, err := m.f.SyscallConn()
	if err != nil {
		return VMA{}, false, fmt.Errorf("query maps: %w", err)
	}
	var errno unix.Errno
	if cerr := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, uintptr(procmapQueryIoctl), uintptr(unsafe.Pointer(&q)))
	}); cerr != nil {
		return VMA{}, false, fmt.Errorf("query maps: %w", cerr)
	}
	switch errno {
	case 0:
		return VMA{Start: q.vmaStart, End: q.vmaEnd, PageSize: q.vmaPageSize}, true, nil
	case unix.ENOENT:
		return VMA{}, false, nil
	case unix.ENOTTY, unix.EINVAL, unix.EOPNOTSUPP:
		return VMA{}, false, errNoQuery
	case unix.ESRCH:
		return VMA{}, false, fmt.Errorf("query maps: %w: %w", ErrProcessGone, errno)
	}
	return VMA{}, false, fmt.Errorf("query maps: %w", errno)
}
