package procmem

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
)

// kpageflags bits the readers of this package interpret
// (include/uapi/linux/kernel-page-flags.h). The full list of names is in
// stratav1.KPageFlagNames.
const (
	KPFBuddy        = 10
	KPFCompoundHead = 15
	KPFCompoundTail = 16
	KPFHuge         = 17
	KPFNoPage       = 20
	KPFTHP          = 22
)

// DefaultMergeGap is the largest hole, in PFNs, that ReadSpans reads through
// to join two spans into one pread. Measured on the development VM (6.18,
// page-table isolation on): a pread costs about 420 ns of CPU beyond its
// entries, and each kpageflags entry about 130-160 ns (the kernel takes a
// snapshot of the page and its folio per entry), so a hole of up to three or four
// entries is about as cheap to read as to skip; four was best in a sweep.
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
	flags, count *os.File
	flagsErr     error
	countErr     error
	buf          []byte
	preads       uint64 // counters for Stats
	entries      uint64
	keys         []uint64 // sortSpans scratch
	sorted       []Span
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
	if k.flags, err = os.Open(f.procPath("kpageflags")); err != nil {
		k.flags = nil
		k.flagsErr = fmt.Errorf("open kpageflags: %w: %w", ErrFlagsUnavailable, err)
	}
	if k.count, err = os.Open(f.procPath("kpagecount")); err != nil {
		k.count = nil
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
	for _, f := range []*os.File{k.flags, k.count} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	k.flags, k.count = nil, nil
	return errors.Join(errs...)
}

// ReadSpans reads kpageflags into flags and kpagecount into counts for every
// span (either destination may be nil to skip that file). It sorts spans by
// PFN in place and reads each group of spans no further than MergeGap apart
// with one pread per file. Entries of a span go to dst[Out : Out+N].
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

func cmpSpan(a, b Span) int { return cmp.Compare(a.PFN, b.PFN) }

// sortSpans sorts spans by PFN. When PFN and index fit in 64 bits together
// (always, for real memory sizes) it sorts packed integer keys, about three
// times faster than sorting the structs with a comparison function.
func (k *KPages) sortSpans(spans []Span) {
	if slices.IsSortedFunc(spans, cmpSpan) {
		return
	}
	shift := uint(bits.Len(uint(len(spans))))
	var top uint64
	for _, s := range spans {
		top |= s.PFN
	}
	if bits.Len64(top)+int(shift) > 64 {
		slices.SortFunc(spans, cmpSpan)
		return
	}
	keys := k.keys[:0]
	for i, s := range spans {
		keys = append(keys, s.PFN<<shift|uint64(i))
	}
	slices.Sort(keys)
	sorted := k.sorted[:0]
	for _, key := range keys {
		sorted = append(sorted, spans[key&(1<<shift-1)])
	}
	copy(spans, sorted)
	k.keys, k.sorted = keys, sorted
}

// readFile reads the sorted spans from f, merging neighbours.
func (k *KPages) readFile(f *os.File, spans []Span, dst []uint64) error {
	for i := 0; i < len(spans); {
		lo := spans[i].PFN
		hi := lo + uint64(spans[i].N)
		j := i + 1
		for ; j < len(spans); j++ {
			s := spans[j]
			if s.PFN > hi+k.MergeGap {
				break
			}
			hi = max(hi, s.PFN+uint64(s.N))
		}
		b, err := k.pread(f, lo, hi-lo)
		if err != nil {
			return err
		}
		for _, s := range spans[i:j] {
			scatter(dst[s.Out:s.Out+s.N], b[(s.PFN-lo)*8:])
		}
		i = j
	}
	return nil
}

func (k *KPages) pread(f *os.File, pfn, n uint64) ([]byte, error) {
	size := int(n * 8)
	if cap(k.buf) < size {
		k.buf = make([]byte, max(size, 64<<10))
	}
	b := k.buf[:size]
	k.preads++
	k.entries += n
	got, err := f.ReadAt(b, int64(pfn*8))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("pfn %#x: %w", pfn, err)
	}
	// Past the last PFN the kernel returns less; those entries read as 0.
	clear(b[got:])
	return b, nil
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

func (k *KPages) readOne(f *os.File, dst []uint64, pfn uint64, name string) error {
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
