package fit

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// BatchBudget is the encoded size the agent cuts batches at: a quarter of
// the collector's limit. The headroom keeps every batch far from the limit
// however the header grows (the spool's seq, NodeInfo), and bounds what the
// spool and the streamer hold in memory per batch.
const BatchBudget = stratav1.MaxBatchBytes / 4

// seqHeadroom is what re-numbering a batch can add to its size: a seq is a
// varint of at most 10 bytes plus its tag.
const seqHeadroom = 11

// Fits reports whether b is within the collector's limits as sent: its
// size (with room for any seq) and every run's page count.
func Fits(b *stratav1.Batch) bool {
	if proto.Size(b)+seqHeadroom > stratav1.MaxBatchBytes {
		return false
	}
	for _, r := range b.GetRecords() {
		if !runsFit(r.GetRuns()) {
			return false
		}
	}
	return true
}

func runsFit(runs []*stratav1.PageRun) bool {
	for _, r := range runs {
		if r.GetCount() > stratav1.MaxRunPages {
			return false
		}
	}
	return true
}

// RecordSize is what rec adds to a Batch's encoded size.
func RecordSize(rec *stratav1.Record) int {
	n := proto.Size(rec)
	return protowire.SizeTag(4) + protowire.SizeBytes(n)
}

// Runs returns runs with every run longer than stratav1.MaxRunPages split
// into runs of at most that many pages; runs itself when none is longer.
func Runs(runs []*stratav1.PageRun, pageSize uint64) []*stratav1.PageRun {
	if runsFit(runs) {
		return runs
	}
	out := make([]*stratav1.PageRun, 0, len(runs)+1)
	for _, r := range runs {
		for r.GetCount() > stratav1.MaxRunPages {
			var head *stratav1.PageRun
			head, r = SplitRun(r, stratav1.MaxRunPages, pageSize)
			out = append(out, head)
		}
		out = append(out, r)
	}
	return out
}

// SplitRun cuts r after its first at pages (0 < at < r.Count) into two runs
// that expand to the same pages: the tail's PFN, swap offset and deltas
// continue where the head's end (stratav1's SubPFNs).
func SplitRun(r *stratav1.PageRun, at uint32, pageSize uint64) (head, tail *stratav1.PageRun) {
	head = without(r, runDeltasField)
	tail = without(r, runDeltasField)
	head.Count = at
	tail.Count = r.GetCount() - at
	tail.Vaddr = r.GetVaddr() + uint64(at)*pageSize
	head.Pfn, head.PfnDeltas = r.SubPFNs(0, at)
	tail.Pfn, tail.PfnDeltas = r.SubPFNs(at, tail.Count)
	if r.GetState()&uint32(stratav1.PageState_PAGE_STATE_SWAPPED) != 0 {
		tail.SwapOffset = r.GetSwapOffset() + uint64(at)
	}
	return head, tail
}

// Record returns rec split into records over consecutive sub-ranges of its
// range, each of RecordSize at most budget (a record with no runs, or whose
// single page alone exceeds the budget, cannot shrink and is returned as
// is). A record that fits is returned alone, unchanged.
func Record(rec *stratav1.Record, budget int, pageSize uint64) []*stratav1.Record {
	if RecordSize(rec) <= budget || len(rec.GetRuns()) == 0 {
		return []*stratav1.Record{rec}
	}
	bare := without(rec, recordRunsField)
	room := budget - RecordSize(bare) - 16 // the piece's own vaddr/length may grow
	var groups [][]*stratav1.PageRun
	var cur []*stratav1.PageRun
	used := 0
	runs := append([]*stratav1.PageRun(nil), rec.GetRuns()...)
	for len(runs) > 0 {
		r := runs[0]
		n := protowire.SizeTag(9) + protowire.SizeBytes(proto.Size(r))
		if used+n <= room {
			cur = append(cur, r)
			used += n
			runs = runs[1:]
			continue
		}
		if len(cur) > 0 {
			groups = append(groups, cur)
			cur, used = nil, 0
			continue
		}
		if r.GetCount() < 2 { // one page over budget: nothing smaller exists
			cur = append(cur, r)
			runs = runs[1:]
			continue
		}
		head, tail := SplitRun(r, r.GetCount()/2, pageSize)
		runs = append([]*stratav1.PageRun{head, tail}, runs[1:]...)
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return pieces(rec, groups)
}

// pieces builds one record per group of runs. Piece i of a record of its
// range's pages covers from its first run (rec's own vaddr for the first)
// to the next piece's start (rec's end for the last), and its coverage
// counts its own length. The pieces of a walked record keep rec's range
// (the array of references; the runs are the objects' pages, elsewhere),
// and the walk's counts go with the first, as the fault counters do.
func pieces(rec *stratav1.Record, groups [][]*stratav1.PageRun) []*stratav1.Record {
	if len(groups) < 2 {
		return []*stratav1.Record{rec}
	}
	cov := rec.GetCoverage()
	// Runs that lie outside the record's range (a walk's objects, a cached
	// batch column's buffers) split by runs, never as sub-ranges.
	walked := cov.GetResolution() == stratav1.Resolution_RESOLUTION_WALKED ||
		cov.GetResolution() == stratav1.Resolution_RESOLUTION_WALK_CUT || cov.GetExtents() > 0
	end := rec.GetVaddr() + rec.GetLength()
	out := make([]*stratav1.Record, len(groups))
	for i, g := range groups {
		p := without(rec, recordRunsField)
		p.Runs = g
		if i > 0 {
			p.Faults = nil // counted once, on the first piece
		}
		switch {
		case walked:
			if i > 0 {
				p.Coverage = &stratav1.Coverage{Resolution: cov.GetResolution(), GcEpoch: cov.GetGcEpoch(), Detail: cov.GetDetail()}
			}
		default:
			if i > 0 {
				p.Vaddr = g[0].GetVaddr()
			}
			next := end
			if i+1 < len(groups) {
				next = groups[i+1][0].GetVaddr()
			}
			p.Length = next - p.GetVaddr()
			if cov != nil {
				c := proto.CloneOf(cov)
				c.Bytes = p.Length
				p.Coverage = c
			}
		}
		out[i] = p
	}
	return out
}

// Items is the number of records, workloads, process memory samples and
// heat samples b carries.
func Items(b *stratav1.Batch) int {
	return len(b.GetRecords()) + len(b.GetWorkloads()) + len(b.GetProcesses()) + len(b.GetHeat())
}

// Halve splits b's items (records, workloads, process memory samples,
// heat samples, in that order) into two batches with b's header (node,
// boot id, node info; seq left to the caller), the first half of the
// sequence in x. ok is false when b carries fewer than two items.
func Halve(b *stratav1.Batch) (x, y *stratav1.Batch, ok bool) {
	n := Items(b)
	if n < 2 {
		return nil, nil, false
	}
	x, y = header(b), header(b)
	i := 0
	dst := func() *stratav1.Batch {
		i++
		if i > n/2 {
			return y
		}
		return x
	}
	for _, r := range b.GetRecords() {
		d := dst()
		d.Records = append(d.Records, r)
	}
	for _, w := range b.GetWorkloads() {
		d := dst()
		d.Workloads = append(d.Workloads, w)
	}
	for _, p := range b.GetProcesses() {
		d := dst()
		d.Processes = append(d.Processes, p)
	}
	for _, h := range b.GetHeat() {
		d := dst()
		d.Heat = append(d.Heat, h)
	}
	return x, y, true
}

// Repair returns b with long runs split and every record over budget split
// into sub-range records (Runs, Record), or b itself when nothing needed it.
func Repair(b *stratav1.Batch, budget int) *stratav1.Batch {
	ps := func(r *stratav1.Record) uint64 {
		if p := r.GetPageSize(); p != 0 {
			return uint64(p)
		}
		return 4096
	}
	changed := false
	recs := make([]*stratav1.Record, 0, len(b.GetRecords()))
	for _, r := range b.GetRecords() {
		if runs := Runs(r.GetRuns(), ps(r)); len(runs) != len(r.GetRuns()) {
			r = without(r, recordRunsField)
			r.Runs = runs
			changed = true
		}
		parts := Record(r, budget, ps(r))
		changed = changed || len(parts) > 1
		recs = append(recs, parts...)
	}
	if !changed {
		return b
	}
	out := without(b, batchRecordsField) // every other field as it was
	out.Records = recs
	return out
}

// Field numbers of the repeated fields that pieces replace.
const (
	batchRecordsField = 4  // Batch.records
	recordRunsField   = 9  // Record.runs
	runDeltasField    = 11 // PageRun.pfn_deltas
)

// without returns a shallow copy of m without field skip: messages it
// holds are shared, never copied, so a piece of a large record costs
// only its own runs.
func without[M proto.Message](m M, skip protowire.Number) M {
	out := m.ProtoReflect().New()
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() != skip {
			out.Set(fd, v)
		}
		return true
	})
	return out.Interface().(M)
}

func header(b *stratav1.Batch) *stratav1.Batch {
	return &stratav1.Batch{NodeName: b.GetNodeName(), BootId: b.GetBootId(), Node: b.GetNode()}
}
