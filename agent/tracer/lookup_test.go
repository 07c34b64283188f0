package tracer

// lookup is the Go twin of match() in bpf/strata.bpf.c, for tests.
func lookup(kv map[strataBucketKey]strataRangeSet, tgid uint32, addr uint64) (strataBlockRange, bool) {
	rs, ok := kv[strataBucketKey{Tgid: tgid, Level: levelBucket, Index: addr >> bucketShift}]
	if !ok {
		return strataBlockRange{}, false
	}
	if rs.Flags&bucketFine != 0 {
		if rs, ok = kv[strataBucketKey{Tgid: tgid, Level: levelPage, Index: addr >> pageShift}]; !ok {
			return strataBlockRange{}, false
		}
	}
	for j := uint32(0); j < rs.N && j < rangeSlots; j++ {
		if r := rs.Ranges[j]; addr >= r.Start && addr < r.End {
			return r, true
		}
	}
	return strataBlockRange{}, false
}
