package tracer

import (
	"errors"
	"testing"
)

// lookup is the Go twin of match() in bpf/strata.bpf.c, for tests.
func lookup(kv map[strataBucketKey]strataRangeSet, tgid uint32, addr uint64) (strataBlockRange, bool) {
	rs, ok := kv[strataBucketKey{Tgid: tgid, Level: levelBucket, Index: addr >> bucketShift}]
	if !ok {
		return strataBlockRange{}, false
	}
	if rs.Flags&bucketFine != 0 {
		if rs, ok = kv[strataBucketKey{Tgid: tgid, Level: levelFine, Index: addr >> fineShift}]; !ok {
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

// fakeStore is the kernel buckets map as a Go map.
type fakeStore map[strataBucketKey]strataRangeSet

func (f fakeStore) put(k strataBucketKey, v *strataRangeSet) error { f[k] = *v; return nil }
func (f fakeStore) del(k strataBucketKey) error                    { delete(f, k); return nil }

func (f fakeStore) delMany(ks []strataBucketKey) error {
	for _, k := range ks {
		delete(f, k)
	}
	return nil
}

func TestIndexDirectAndDense(t *testing.T) {
	const mib = 1 << 20
	s := fakeStore{}
	p := newProcIndex(7)
	base := uint64(0x7f0000000000)
	// A 5 MiB block spanning three buckets, and a small one after it.
	big := &block{id: 1, start: base + mib, end: base + 6*mib, slot: 10}
	small := &block{id: 2, start: base + 6*mib, end: base + 6*mib + 100, slot: 11}
	for _, b := range []*block{big, small} {
		if err := p.add(s, b); err != nil {
			t.Fatal(err)
		}
	}
	if len(s) != 4 { // big covers buckets 0-2, small bucket 3
		t.Fatalf("%d entries, want 4 direct buckets", len(s))
	}
	check := func(addr uint64, want uint64, ok bool) {
		t.Helper()
		r, found := lookup(s, 7, addr)
		if found != ok || (ok && r.BlockId != want) {
			t.Errorf("lookup %#x: %v %d, want %v %d", addr, found, r.BlockId, ok, want)
		}
	}
	check(base+mib, 1, true)
	check(base+mib-1, 0, false)
	check(base+6*mib-1, 1, true)
	check(base+6*mib+99, 2, true)
	check(base+6*mib+100, 0, false)
	if _, ok := lookup(s, 8, base+mib); ok {
		t.Error("another tgid matched")
	}
	if err := p.add(s, &block{id: 3, start: base + 2*mib, end: base + 2*mib + 1}); !errors.Is(err, ErrOverlap) {
		t.Errorf("overlap: %v", err)
	}
	if err := p.add(s, &block{id: 1, start: base + 100*mib, end: base + 101*mib}); !errors.Is(err, ErrBlockExists) {
		t.Errorf("duplicate: %v", err)
	}

	// Fill the last bucket with 20 small blocks: it turns fine-grained.
	bucket := (base + 6*mib) >> bucketShift
	const stride = 16 << 10 // four per 64 KiB granule
	for i := uint64(0); i < 20; i++ {
		b := &block{id: 100 + i, start: base + 6*mib + stride*(i+1), end: base + 6*mib + stride*(i+1) + 2048, slot: uint32(100 + i)}
		if err := p.add(s, b); err != nil {
			t.Fatal(err)
		}
	}
	if rs := s[strataBucketKey{Tgid: 7, Level: levelBucket, Index: bucket}]; rs.Flags&bucketFine == 0 {
		t.Fatalf("bucket not fine: %+v", rs)
	}
	check(base+6*mib+99, 2, true)
	check(base+6*mib+stride*5+10, 104, true)
	check(base+6*mib+stride*5+2048, 0, false)
	check(base+5*mib, 1, true)
	// Nine blocks in one granule is too dense, and leaves nothing behind.
	var err error
	for i := uint64(0); i < 9 && err == nil; i++ {
		err = p.add(s, &block{id: 200 + i, start: base + 200*mib + 100*i, end: base + 200*mib + 100*i + 50})
	}
	if !errors.Is(err, ErrTooDense) {
		t.Errorf("ninth block in a page: %v", err)
	}
	if _, ok := p.blocks[208]; ok {
		t.Error("rejected block stayed in the index")
	}
	// Removing the small blocks makes the bucket direct again, with no granule entries.
	for i := uint64(0); i < 20; i++ {
		if err := p.remove(s, p.blocks[100+i]); err != nil {
			t.Fatal(err)
		}
	}
	for k := range s {
		if k.Level == levelFine && k.Index>>(bucketShift-fineShift) == bucket {
			t.Fatalf("granule entry %+v left behind", k)
		}
	}
	check(base+6*mib+99, 2, true)
	if err := p.clear(s); err != nil {
		t.Fatal(err)
	}
	if len(s) != 0 || len(p.buckets) != 0 {
		t.Errorf("after clear: %d entries, %d buckets", len(s), len(p.buckets))
	}
}
