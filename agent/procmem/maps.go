package procmem

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/prometheus/procfs"
)

// VMA is one mapping of /proc/PID/maps: [Start, End).
type VMA struct {
	Start, End uint64
	Path       string // file or pseudo-path ([heap], [stack]); "" for anonymous
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
