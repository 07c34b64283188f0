package jsonform

import (
	"strconv"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/query"
)

// App is one application holding records: an element of /api/v1/apps.
type App struct {
	AppID      string   `json:"app_id"`
	Name       string   `json:"name"`     // its analysed job's; "" unknown
	Machines   []string `json:"machines"` // node names, sorted
	Executors  uint32   `json:"executors"`
	Records    uint64   `json:"records"`
	LiveBlocks uint64   `json:"live_blocks"` // cached RDD blocks live now
	First      string   `json:"first"`       // its first and last record
	Last       string   `json:"last"`
}

// NewApps is apps' form.
func NewApps(apps []answer.AppSummary) []App {
	out := []App{}
	for _, a := range apps {
		out = append(out, App{AppID: a.AppID, Name: a.Name, Machines: append([]string{}, a.Machines...), Executors: a.Executors,
			Records: a.Records, LiveBlocks: a.LiveBlocks, First: Time(a.FirstNs), Last: Time(a.LastNs)})
	}
	return out
}

// ResolvedBlock is one Spark block of an RDD and what Strata resolved of
// it, its buffers each as last resolved while live: an element of
// /api/v1/apps/{app}/rdds/{rdd}/blocks. Bytes, SparkBytes, ResolvedBytes,
// SharedBytes, ResolvedShare, Resolved and Parts mean what an RDD's do,
// for this block.
type ResolvedBlock struct {
	ExecutorID    string   `json:"executor_id"`
	BlockID       string   `json:"block_id"`
	Partition     int32    `json:"partition"`
	Bytes         uint64   `json:"bytes"`
	SparkBytes    uint64   `json:"spark_bytes"`
	ResolvedBytes uint64   `json:"resolved_bytes"`
	SharedBytes   uint64   `json:"shared_bytes"`
	ResolvedShare *float64 `json:"resolved_share"`
	Resolved      string   `json:"resolved"`
	Parts         []Part   `json:"parts"`
	Buffers       []Buffer `json:"buffers"` // by chunk
}

// Buffer is one buffer of a block: a serialized block's buffer, a cached
// batch's column buffer, a deserialized block's array and its objects.
type Buffer struct {
	Chunk       uint32 `json:"chunk"`
	Chunks      uint32 `json:"chunks"`
	Time        string `json:"time"`       // of the record(s) that resolved it
	Resolution  string `json:"resolution"` // buffers, walked, walk_cut, references, unspecified
	Holds       string `json:"holds"`      // in words: "walked objects", "references only: walk pending"
	Bytes       uint64 `json:"bytes"`      // coverage bytes (the range's length without coverage)
	Objects     uint64 `json:"objects"`
	SharedBytes uint64 `json:"shared_bytes"`
	Detail      string `json:"detail"`
	CachedBatch bool   `json:"cached_batch"`
	Column      *int32 `json:"column"` // a cached batch's column; null: every column (Arrow) or not a column buffer
	ColumnName  string `json:"column_name"`
	Pages       uint64 `json:"pages"`
}

// NewResolvedBlock is b's form.
func NewResolvedBlock(b answer.BlockCoverage) ResolvedBlock {
	out := ResolvedBlock{ExecutorID: b.ExecutorID, BlockID: b.BlockID, Partition: b.Partition, Bytes: b.Bytes,
		SparkBytes: b.SparkBytes, ResolvedBytes: b.ResolvedBytes, SharedBytes: b.SharedBytes, ResolvedShare: b.ResolvedShare,
		Resolved: resolvedWords(b.Parts, b.SparkBytes, b.ResolvedShare), Parts: newParts(b.Parts), Buffers: []Buffer{}}
	for _, x := range b.Buffers {
		c := x.Coverage
		buf := Buffer{Chunk: x.Chunk, Chunks: x.Chunks, Time: Time(x.TimeNs), Resolution: Resolution(c.GetResolution()),
			Holds: query.HoldsWords(c), Bytes: x.Length, CachedBatch: x.CachedBatch, Column: x.Column, ColumnName: x.ColumnName,
			Pages: x.Pages}
		if c != nil {
			buf.Bytes, buf.Objects, buf.SharedBytes, buf.Detail = c.GetBytes(), c.GetObjects(), c.GetSharedBytes(), c.GetDetail()
		}
		out.Buffers = append(out.Buffers, buf)
	}
	return out
}

// NewResolvedBlocks is bs' form.
func NewResolvedBlocks(bs []answer.BlockCoverage) []ResolvedBlock { return List(bs, NewResolvedBlock) }

// Occupancy is one RDD's resident memory over time: an element of
// /api/v1/apps/{app}/occupancy. Color is the colour the UI draws the RDD
// in.
type Occupancy struct {
	RDD    int32            `json:"rdd"`
	Color  string           `json:"color"`
	Points []OccupancyPoint `json:"points"`
}

// OccupancyPoint is an RDD's resident pages and bytes at the end of a
// time bucket in which they changed; they hold until the next point.
type OccupancyPoint struct {
	Time  string `json:"time"`
	Pages uint64 `json:"pages"`
	Bytes uint64 `json:"bytes"`
}

// NewOccupancy is series' form, each RDD coloured by color.
func NewOccupancy(series []query.RDDSeries, color func(rdd int32) string) []Occupancy {
	out := []Occupancy{}
	for _, s := range series {
		o := Occupancy{RDD: s.RDD, Color: color(s.RDD), Points: []OccupancyPoint{}}
		for _, p := range s.Points {
			o.Points = append(o.Points, OccupancyPoint{Time: Time(p.TimeNs), Pages: p.Pages, Bytes: p.Bytes})
		}
		out = append(out, o)
	}
	return out
}

// MemMap is /api/v1/apps/{app}/memmap: answer.PhysMap (PFNs as numbers)
// with the colour the UI draws each RDD in, by RDD id, and the moment of
// the app's life it shows.
type MemMap struct {
	*answer.PhysMap
	Colors map[string]string `json:"colors"`
	Moment Moment            `json:"moment"`
}

// NewMemMap is m's form at moment mo, each RDD coloured by color.
func NewMemMap(m *answer.PhysMap, mo answer.Moment, color func(rdd int32) string) MemMap {
	out := MemMap{PhysMap: m, Colors: map[string]string{}, Moment: NewMoment(mo)}
	for _, r := range m.RDDs {
		out.Colors[strconv.Itoa(int(r.RDDID))] = color(r.RDDID)
	}
	return out
}

// Moment is the moment of an application's life an answer shows (the
// memory map's, an RDD's blocks', a trace's): /api/v1/apps/{app}/moment.
type Moment struct {
	// At is the moment; "" is now.
	At string `json:"at"`
	// Kind is "now", "peak" (the first time the app's cached RDD blocks
	// held the most bytes) or "at" (a time asked for); Default says it
	// is the app's default moment, not one asked for.
	Kind    string `json:"kind"`
	Default bool   `json:"default"`
	// Says is which moment it is and why, as `strata` and the UI print it.
	Says string `json:"says"`
	// Ended: none of the app's blocks is live any more.
	Ended bool `json:"ended"`
	// First and Last are the app's first and last lifecycle record.
	First string `json:"first"`
	Last  string `json:"last"`
	// Peak is when its cached RDD blocks held the most ("" never a page),
	// PeakBytes what they held then.
	Peak      string `json:"peak"`
	PeakBytes uint64 `json:"peak_bytes"`
	// Bytes and Pages are what its cached RDD blocks held at the moment.
	Bytes uint64 `json:"bytes"`
	Pages uint64 `json:"pages"`
}

// NewMoment is m's form.
func NewMoment(m answer.Moment) Moment {
	out := Moment{Kind: "at", Default: m.Default, Says: query.MomentWords(m), Ended: m.Ended, First: Time(m.FirstNs),
		Last: Time(m.LastNs), PeakBytes: m.PeakBytes, Bytes: m.Bytes, Pages: m.Pages}
	switch m.Kind {
	case answer.MomentNow:
		out.Kind = "now"
	case answer.MomentPeak:
		out.Kind = "peak"
	}
	if m.AtNs != 0 {
		out.At = Time(m.AtNs)
	}
	if m.PeakNs != 0 {
		out.Peak = Time(m.PeakNs)
	}
	return out
}

// BlockLife is /api/v1/apps/{app}/blocks/{executor}/{block}: every step of
// one block's life with the pages it held.
type BlockLife struct {
	App        string     `json:"app"`
	ExecutorID string     `json:"executor_id"`
	BlockID    string     `json:"block_id"`
	RDD        int32      `json:"rdd"`
	Partition  int32      `json:"partition"`
	Kind       string     `json:"kind"`
	Mode       string     `json:"mode"`
	Steps      []LifeStep `json:"steps"`
	// Truncated: the pages were not all read, or the records not all
	// listed.
	Truncated bool `json:"truncated"`
}

// LifeStep is the records of one time, access and process (an agent
// splits a large record into several over sub-ranges) with the pages
// they held.
type LifeStep struct {
	Time          string            `json:"time"`
	Access        string            `json:"access"`
	PID           uint32            `json:"pid"`
	VAddr         string            `json:"vaddr"`
	Length        uint64            `json:"length"`
	Pages         uint64            `json:"pages"` // as the records say
	Present       uint64            `json:"present"`
	Swapped       uint64            `json:"swapped"`
	THP           uint64            `json:"thp"`
	Nodes         map[string]uint64 `json:"nodes"`       // present pages per NUMA node ("-1" unknown)
	Ranges        []PFNRange        `json:"ranges"`      // the first PFN ranges
	MoreRanges    uint64            `json:"more_ranges"` // ranges not listed
	FreeReason    string            `json:"free_reason,omitempty"`
	FaultKind     string            `json:"fault_kind,omitempty"`
	Faults        *FaultCounts      `json:"faults,omitempty"`
	ResolveError  string            `json:"resolve_error,omitempty"`
	Holds         string            `json:"holds"` // what the pages hold of the block, in words
	CoverageBytes uint64            `json:"coverage_bytes"`
}

// PFNRange is a range of consecutive PFNs [first, last] on one node.
type PFNRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	Node  int32  `json:"node"`
}

// NewBlockLife is l's form.
func NewBlockLife(l *query.BlockLife) BlockLife {
	out := BlockLife{App: l.App, ExecutorID: l.ExecutorID, BlockID: l.BlockID, RDD: l.RDD, Partition: l.Partition,
		Kind: l.Kind, Mode: l.Mode, Steps: []LifeStep{}, Truncated: l.Truncated}
	for _, s := range l.Steps {
		st := LifeStep{Time: Time(s.TimeNs), Access: s.Access, PID: s.PID, VAddr: Hex(s.Vaddr), Length: s.Length, Pages: s.Pages,
			Present: s.Present, Swapped: s.Swapped, THP: s.THP, Nodes: map[string]uint64{}, Ranges: []PFNRange{},
			MoreRanges: s.MoreRanges, FreeReason: s.FreeReason, FaultKind: s.FaultKind, ResolveError: s.ResolveError,
			Holds: s.Holds, CoverageBytes: s.CoverageBytes}
		for n, c := range s.Nodes {
			st.Nodes[strconv.Itoa(int(n))] = c
		}
		for _, r := range s.Ranges {
			st.Ranges = append(st.Ranges, PFNRange{First: r.First, Last: r.Last, Node: r.Node})
		}
		if s.Faults != nil {
			f := NewFaultCounts(s.Faults)
			st.Faults = &f
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}
