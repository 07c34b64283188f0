package procmem

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kpageflags bits the readers of this package interpret
// (include/uapi/linux/kernel-page-flags.h). The full list of names is in
// stratav1.KPageFlagNames.
const (
	KPFMmap         = 11
	KPFAnon         = 12
	KPFBuddy        = 10
	KPFCompoundHead = 15
	KPFCompoundTail = 16
	KPFHuge         = 17
	KPFNoPage       = 20
	KPFTHP          = 22
	KPFZeroPage     = 24
)

// DefaultMergeGap is the largest hole, in PFNs, that ReadSpans reads through
// to join two spans into one pread. A pread costs about as much as a few
// kpageflags entries (the kernel takes a snapshot of the page and its folio
// per entry), so a hole no longer than that is cheaper to read through than
// to skip with another pread. BenchmarkKPageRead measures how many entries
// a pread is worth on the machine it runs on (break-even-gap).
const DefaultMergeGap = 4

// Span asks for the entries of N consecutive PFNs starting at PFN; they are
// stored at index Out of the destination slices.
type Span struct {
	PFN uint64
	N   uint32
	Out uint32
}

// KPages reads /proc/kpageflags and /proc/kpagecount. Both hold one
// little-endian u64 per PFN at offset PFN * 8: kpageflags the page's flags
// (bit numbers as in KPF* and stratav1.KPageFlagNames), kpagecount the number
// of times the page is mapped. Either file may be missing or unreadable (they
// are root-only); the reader then reports ErrFlagsUnavailable for it.
type KPages struct {
	flags, count *kfile
	flagsErr     error
	countErr     error
	buf          []byte
	preads       uint64 // counters for Stats
	entries      uint64
	order        []uint64 // sortSpans: span indexes in PFN order, in the low shift bits
	shift        uint
	// MergeGap is the largest hole between spans read through; see
	// DefaultMergeGap.
	MergeGap uint64
}

// ErrFlagsUnavailable reports that /proc/kpageflags or /proc/kpagecount
// cannot be read (they need root).
var ErrFlagsUnavailable = errors.New("kpageflags unavailable")

// OpenKPages opens /proc/kpageflags and /proc/kpagecount. It fails only when
// neither opens; FlagsErr and CountErr say which one is missing.
func (f FS) OpenKPages() (*KPages, error) {
	k := &KPages{MergeGap: DefaultMergeGap}
	var err error
	if k.flags, err = openKFile(f.procPath("kpageflags")); err != nil {
		k.flagsErr = fmt.Errorf("open kpageflags: %w: %w", ErrFlagsUnavailable, err)
	}
	if k.count, err = openKFile(f.procPath("kpagecount")); err != nil {
		k.countErr = fmt.Errorf("open kpagecount: %w: %w", ErrFlagsUnavailable, err)
	}
	if k.flags == nil && k.count == nil {
		return nil, errors.Join(k.flagsErr, k.countErr)
	}
	return k, nil
}

// Stats returns how many preads the reader made and how many entries they
// covered, over its lifetime (for metrics and benchmarks).
func (k *KPages) Stats() (preads, entries uint64) { return k.preads, k.entries }

// FlagsErr is why kpageflags cannot be read, nil when it can.
func (k *KPages) FlagsErr() error { return k.flagsErr }

// CountErr is why kpagecount cannot be read, nil when it can.
func (k *KPages) CountErr() error { return k.countErr }

// Close closes both files; it is safe on a nil KPages.
func (k *KPages) Close() error {
	if k == nil {
		return nil
	}
	var errs []error
	for _, f := range []*kfile{k.flags, k.count} {
		if f != nil {
			errs = append(errs, f.f.Close())
		}
	}
	k.flags, k.count = nil, nil
	return errors.Join(errs...)
}

// ReadSpans reads kpageflags into flags and kpagecount into counts for every
// span (either destination may be nil to skip that file). It reads the
// spans in PFN order (spans itself is left as it is), each group of spans
// no further than MergeGap apart with one pread per file. Entries of a span
// go to dst[Out : Out+N].
func (k *KPages) ReadSpans(spans []Span, flags, counts []uint64) error {
	if len(spans) == 0 {
		return nil
	}
	k.sortSpans(spans)
	if flags != nil {
		if k.flags == nil {
			return k.flagsErr
		}
		if err := k.readFile(k.flags, spans, flags); err != nil {
			return fmt.Errorf("read kpageflags: %w", err)
		}
	}
	if counts != nil {
		if k.count == nil {
			return k.countErr
		}
		if err := k.readFile(k.count, spans, counts); err != nil {
			return fmt.Errorf("read kpagecount: %w", err)
		}
	}
	return nil
}

// sortSpans leaves in k.order the indexes of spans in PFN order, in the low
// k.shift bits of each element; k.order is empty when spans are sorted
// already. When PFN and index fit in 64 bits together (always, for real
// memory sizes) it sorts packed integer keys, about three times faster
// than sorting with a comparison function.
func (k *KPages) sortSpans(spans []Span) {
	order := k.order[:0]
	defer func() { k.order = order }()
	if slices.IsSortedFunc(spans, cmpSpan) {
		return
	}
	k.shift = uint(bits.Len(uint(len(spans))))
	var top uint64
	for _, s := range spans {
		top |= s.PFN
	}
	if bits.Len64(top)+int(k.shift) > 64 {
		k.shift = 64
		for i := range spans {
			order = append(order, uint64(i))
		}
		slices.SortFunc(order, func(a, b uint64) int { return cmpSpan(spans[a], spans[b]) })
		return
	}
	for i, s := range spans {
		order = append(order, s.PFN<<k.shift|uint64(i))
	}
	slices.Sort(order)
}

func cmpSpan(a, b Span) int { return cmp.Compare(a.PFN, b.PFN) }

// span returns the j-th span in PFN order (see sortSpans).
func (k *KPages) span(spans []Span, j int) Span {
	if len(k.order) == 0 {
		return spans[j]
	}
	return spans[k.order[j]&(1<<k.shift-1)]
}

// readFile reads the spans from f in PFN order, merging neighbours.
func (k *KPages) readFile(f *kfile, spans []Span, dst []uint64) error {
	for i := 0; i < len(spans); {
		first := k.span(spans, i)
		lo, hi := first.PFN, first.PFN+uint64(first.N)
		j := i + 1
		for ; j < len(spans); j++ {
			s := k.span(spans, j)
			if s.PFN > hi+k.MergeGap {
				break
			}
			hi = max(hi, s.PFN+uint64(s.N))
		}
		b, err := k.pread(f, lo, hi-lo)
		if err != nil {
			return err
		}
		for m := i; m < j; m++ {
			s := k.span(spans, m)
			scatter(dst[s.Out:s.Out+s.N], b[(s.PFN-lo)*8:])
		}
		i = j
	}
	return nil
}

// rawMax is the largest read, in entries, made with a raw pread(2).
const rawMax = 512

// pread reads the entries of the n PFNs from pfn. A read of up to rawMax
// entries is a raw pread(2), which does not tell the Go scheduler that the
// thread is in a syscall: the kernel copies the entries out without waiting
// for anything, for a bounded time, and the scheduler's bookkeeping is a
// good part of the cost of a small read. Most preads of scattered 4 KiB
// pages are small.
func (k *KPages) pread(f *kfile, pfn, n uint64) ([]byte, error) {
	size := int(n * 8)
	if cap(k.buf) < size {
		k.buf = make([]byte, max(size, 64<<10))
	}
	b := k.buf[:size]
	k.preads++
	k.entries += n
	var got int
	var err error
	if n <= rawMax {
		got, err = f.rawPread(b, int64(pfn*8))
	} else {
		got, err = f.f.ReadAt(b, int64(pfn*8))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("pfn %#x: %w", pfn, err)
	}
	// Past the last PFN the kernel returns less; those entries read as 0.
	clear(b[got:])
	return b, nil
}

// kfile is kpageflags or kpagecount, open, with its descriptor for raw
// preads.
type kfile struct {
	f  *os.File
	fd uintptr
}

func openKFile(path string) (*kfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// Fd makes the descriptor blocking once; procfs files are anyway.
	return &kfile{f: f, fd: f.Fd()}, nil
}

// rawPread is pread(2) on f's descriptor without the scheduler's syscall
// bookkeeping; it returns io.EOF at the end of the file, like ReadAt.
func (f *kfile) rawPread(b []byte, off int64) (int, error) {
	got := 0
	for got < len(b) {
		n, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, f.fd, uintptr(unsafe.Pointer(&b[got])), uintptr(len(b)-got), uintptr(off+int64(got)), 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return got, errno
		case n == 0:
			return got, io.EOF
		}
		got += int(n)
	}
	runtime.KeepAlive(f.f)
	return got, nil
}

// scatter decodes len(dst) little-endian u64s from b.
func scatter(dst []uint64, b []byte) {
	if len(dst) == 0 {
		return
	}
	_ = b[len(dst)*8-1]
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
}

// ReadFlags reads kpageflags of len(dst) consecutive PFNs starting at pfn.
func (k *KPages) ReadFlags(dst []uint64, pfn uint64) error {
	if k.flags == nil {
		return k.flagsErr
	}
	return k.readOne(k.flags, dst, pfn, "kpageflags")
}

// ReadCounts reads kpagecount of len(dst) consecutive PFNs starting at pfn.
func (k *KPages) ReadCounts(dst []uint64, pfn uint64) error {
	if k.count == nil {
		return k.countErr
	}
	return k.readOne(k.count, dst, pfn, "kpagecount")
}

func (k *KPages) readOne(f *kfile, dst []uint64, pfn uint64, name string) error {
	if len(dst) == 0 {
		return nil
	}
	b, err := k.pread(f, pfn, uint64(len(dst)))
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	scatter(dst, b)
	return nil
}
