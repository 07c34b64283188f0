package damon

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// UpdateTried asks kdamond k to fill its schemes' tried_regions
// directories with the regions each scheme matched in the next aggregation
// interval (the state command update_schemes_tried_regions). It changes
// none of the kdamond's inputs. The write returns once the kernel has
// filled them, up to one aggregation interval later; meanwhile DAMON's
// sysfs lock is held, and other writers of its files get EBUSY.
func (s Sysfs) UpdateTried(k int) error {
	return s.write(kdamondDir(k)+"/state", "update_schemes_tried_regions")
}

// TriedRegions reads the tried regions of scheme sc of context c of
// kdamond k, as UpdateTried last filled them, in bytes (addrUnit bytes per
// address unit), sorted by start.
func (s Sysfs) TriedRegions(k, c, sc int, addrUnit uint64) ([]Region, error) {
	dir := fmt.Sprintf("%s/schemes/%d/tried_regions", contextDir(k, c), sc)
	idx, err := s.indexDirs(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Region, 0, len(idx))
	for _, i := range idx {
		rd := dir + "/" + strconv.Itoa(i)
		var files [4][]byte
		for j, name := range regionFiles {
			if files[j], err = s.readFile(rd + "/" + name); err != nil {
				return nil, err
			}
		}
		r, err := parseRegion(files[0], files[1], files[2], files[3], addrUnit)
		if err != nil {
			return nil, fmt.Errorf("read damon %s: %w", rd, err)
		}
		out = append(out, r)
	}
	return sortRegions(out), nil
}

// sortRegions sorts regions by start and drops any that overlap the one
// before (one target's regions never do; two targets' might).
func sortRegions(rs []Region) []Region {
	slices.SortFunc(rs, func(a, b Region) int { return cmp.Compare(a.Start, b.Start) })
	out := rs[:0]
	for _, r := range rs {
		if len(out) > 0 && r.Start < out[len(out)-1].End {
			continue
		}
		out = append(out, r)
	}
	return out
}
