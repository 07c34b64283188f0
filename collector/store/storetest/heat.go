package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// Heat sources of HeatBatch's samples.
const (
	HeatOwn    = "own: kdamond 0 scheme 0 stat, every region"
	HeatShared = "shared: kdamond 0 scheme 0 pageout, regions nr_accesses <= 1 age >= 12 (1m0s) (within a quota)"
)

const gib = uint64(1) << 30

func u64p(v uint64) *uint64   { return &v }
func f64p(v float64) *float64 { return &v }
func heatCopy(h *stratav1.HeatSample) *stratav1.HeatSample {
	return proto.Clone(h).(*stratav1.HeatSample)
}

// HeatSamples are the heat samples of HeatBatch:
//
//   - 0, T0+10s: rdd_7_3 (executor 1, pid 100), own kdamond sampling every
//     200 ms: 2 GiB resolved and monitored, 1 GiB covered at access rate
//     0.5, nothing cold.
//   - 1, T0+20s: rdd_7_3 again: 2 GiB covered at rate 0.25, 1 GiB of it
//     cold, mean age 90 s, youngest 70 s.
//   - 2, T0+20s: rdd_8_0 (executor 2, pid 200), a shared kdamond's scheme
//     (partial, no target ranges so no monitored bytes) sampling every
//     500 ms: 1 GiB resolved, 0.5 GiB covered at rate 0, all cold, 30 s.
//   - 3, T0+20s: broadcast_0 (not an RDD block), left out of Heat.
func HeatSamples() []*stratav1.HeatSample {
	own := stratav1.HeatSourceKind_HEAT_SOURCE_KIND_OWN
	return []*stratav1.HeatSample{
		{AppId: App, ExecutorId: "1", Pid: 100, RddId: 7, Partition: 3, BlockId: "rdd_7_3", HookBlockId: 11,
			TimeUnixNano: T0 + 10e9, IntervalNs: 4e9, SampleIntervalNs: 2e8, ResolvedBytes: 2 * gib, MonitoredBytes: u64p(2 * gib),
			CoveredBytes: gib, AccessRate: f64p(0.5), SourceKind: own, Source: HeatOwn},
		{AppId: App, ExecutorId: "1", Pid: 100, RddId: 7, Partition: 3, BlockId: "rdd_7_3", HookBlockId: 11,
			TimeUnixNano: T0 + 20e9, IntervalNs: 4e9, SampleIntervalNs: 2e8, ResolvedBytes: 2 * gib, MonitoredBytes: u64p(2 * gib),
			CoveredBytes: 2 * gib, AccessRate: f64p(0.25), ColdBytes: gib, ColdAgeSeconds: f64p(90), ColdMinAgeSeconds: f64p(70),
			SourceKind: own, Source: HeatOwn},
		{AppId: App, ExecutorId: "2", Pid: 200, RddId: 8, Partition: 0, BlockId: "rdd_8_0", HookBlockId: 21,
			TimeUnixNano: T0 + 20e9, IntervalNs: 5e9, SampleIntervalNs: 5e8, ResolvedBytes: gib,
			CoveredBytes: gib / 2, AccessRate: f64p(0), ColdBytes: gib / 2, ColdAgeSeconds: f64p(30), ColdMinAgeSeconds: f64p(30),
			SourceKind: stratav1.HeatSourceKind_HEAT_SOURCE_KIND_SHARED, Partial: true, Source: HeatShared},
		{AppId: App, ExecutorId: "1", Pid: 100, RddId: -1, Partition: -1, BlockId: "broadcast_0", HookBlockId: 12,
			TimeUnixNano: T0 + 20e9, IntervalNs: 4e9, SampleIntervalNs: 2e8, ResolvedBytes: gib, MonitoredBytes: u64p(gib),
			CoveredBytes: gib, AccessRate: f64p(1), SourceKind: own, Source: HeatOwn},
	}
}

// HeatBatch is Sample(seq) with HeatSamples.
func HeatBatch(seq uint64) *stratav1.Batch {
	b := Sample(seq)
	b.Heat = HeatSamples()
	return b
}

// WantHeat is Heat's answer for App after HeatBatch, with cold-for 60 s.
func WantHeat() *answer.Heat {
	hs := HeatSamples()
	s0, s1, s2 := heatCopy(hs[0]), heatCopy(hs[1]), heatCopy(hs[2])
	rdd7Latest := answer.HeatFigures{Samples: 1, CoveredBytes: 2 * gib, MonitoredBytes: 2 * gib, ColdBytes: gib,
		ColdForBytes: gib, AccessRate: f64p(0.25), AccessesPerSecGiB: f64p(1.25), ColdShare: f64p(0.5),
		ColdAgeSeconds: f64p(90), Sources: []string{HeatOwn}}
	rdd8 := answer.HeatFigures{Samples: 1, CoveredBytes: gib / 2, MonitoredBytes: gib / 2, ColdBytes: gib / 2,
		AccessRate: f64p(0), AccessesPerSecGiB: f64p(0), ColdShare: f64p(0), ColdAgeSeconds: f64p(30),
		Partial: true, Sources: []string{HeatShared}}
	return &answer.Heat{ColdFor: time.Minute, RDDs: []answer.HeatRDD{
		{RDD: 7, Latest: rdd7Latest,
			Points: []answer.HeatPoint{
				{TimeUnixNano: T0 + 10e9, HeatFigures: answer.HeatFigures{Samples: 1, CoveredBytes: gib, MonitoredBytes: 2 * gib,
					AccessRate: f64p(0.5), AccessesPerSecGiB: f64p(2.5), ColdShare: f64p(0), Sources: []string{HeatOwn}}},
				{TimeUnixNano: T0 + 20e9, HeatFigures: rdd7Latest},
			},
			Blocks: []answer.HeatBlock{{NodeName: Node, Samples: []*stratav1.HeatSample{s0, s1}}}},
		{RDD: 8, Latest: rdd8, Points: []answer.HeatPoint{{TimeUnixNano: T0 + 20e9, HeatFigures: rdd8}},
			Blocks: []answer.HeatBlock{{NodeName: Node, Samples: []*stratav1.HeatSample{s2}}}},
	}}
}

// wantHeat checks Heat's answer to q against want.
func wantHeat(tb testing.TB, s answer.TraceReader, q answer.HeatQuery, want *answer.Heat) {
	tb.Helper()
	got, err := s.Heat(context.Background(), q)
	if err != nil {
		tb.Fatalf("heat %+v: %v", q, err)
	}
	if len(got.RDDs) != len(want.RDDs) {
		tb.Fatalf("heat %+v: %d RDDs, want %d: %+v", q, len(got.RDDs), len(want.RDDs), got)
	}
	for i, w := range want.RDDs {
		g := got.RDDs[i]
		if len(g.Blocks) != len(w.Blocks) {
			tb.Fatalf("rdd %d: %d blocks, want %d", w.RDD, len(g.Blocks), len(w.Blocks))
		}
		for j, wb := range w.Blocks {
			gb := g.Blocks[j]
			if gb.NodeName != wb.NodeName {
				tb.Errorf("rdd %d block %d: node %q, want %q", w.RDD, j, gb.NodeName, wb.NodeName)
			}
			EqualRows(tb, gb.Samples, wb.Samples)
		}
		g.Blocks, w.Blocks = nil, nil
		if !reflect.DeepEqual(g, w) {
			tb.Errorf("rdd %d figures:\n got %s\nwant %s", w.RDD, figures(g), figures(w))
		}
	}
	if got.ColdFor != want.ColdFor {
		tb.Errorf("cold-for %v, want %v", got.ColdFor, want.ColdFor)
	}
}

// figures prints an RDD's figures with the pointers' values.
func figures(r answer.HeatRDD) string {
	f := func(h answer.HeatFigures) string {
		p := func(v *float64) any {
			if v == nil {
				return "nil"
			}
			return *v
		}
		return fmt.Sprintf("{n=%d cov=%d mon=%d cold=%d coldFor=%d rate=%v aps=%v share=%v age=%v partial=%v %q}", h.Samples,
			h.CoveredBytes, h.MonitoredBytes, h.ColdBytes, h.ColdForBytes, p(h.AccessRate), p(h.AccessesPerSecGiB),
			p(h.ColdShare), p(h.ColdAgeSeconds), h.Partial, h.Sources)
	}
	out := "latest " + f(r.Latest)
	for _, pt := range r.Points {
		out += fmt.Sprintf(" @%d %s", pt.TimeUnixNano, f(pt.HeatFigures))
	}
	return out
}

// testHeat: a batch with heat samples is stored once (its replay is a
// Duplicate and adds no sample), its samples read back exactly as sent,
// and the figures per RDD are exact.
func testHeat(t *testing.T, be Backend) {
	s := be.open(t)
	if got := MustAppend(t, s, HeatBatch(1)); got.Duplicate {
		t.Fatal("first append reported duplicate")
	}
	if got := MustAppend(t, s, HeatBatch(1)); !got.Duplicate {
		t.Fatal("replayed batch with heat was not a duplicate")
	}
	wantHeat(t, s, answer.HeatQuery{AppID: App, ColdFor: time.Minute}, WantHeat())

	rdd8 := int32(8)
	want := WantHeat()
	want.RDDs = want.RDDs[1:]
	wantHeat(t, s, answer.HeatQuery{AppID: App, RDD: &rdd8, ColdFor: time.Minute}, want)

	// cold for at least 0 s: every cold byte with a known youngest age.
	want = WantHeat()
	want.ColdFor = 0
	for i := range want.RDDs {
		r := &want.RDDs[i]
		share := map[int32]float64{7: 0.5, 8: 1}[r.RDD]
		r.Latest.ColdForBytes, r.Latest.ColdShare = r.Latest.ColdBytes, f64p(share)
		for j := range r.Points {
			p := &r.Points[j].HeatFigures
			if p.ColdBytes > 0 {
				p.ColdForBytes, p.ColdShare = p.ColdBytes, f64p(share)
			}
		}
	}
	wantHeat(t, s, answer.HeatQuery{AppID: App}, want)

	// A batch of heat samples alone is stored and read as well.
	only := &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: 2, Heat: []*stratav1.HeatSample{heatCopy(HeatSamples()[2])}}
	only.Heat[0].TimeUnixNano = T0 + 30e9
	if got := MustAppend(t, s, only); got != (store.AppendResult{}) {
		t.Fatalf("append of heat alone = %+v", got)
	}
	want = WantHeat()
	want.RDDs = want.RDDs[1:]
	r := &want.RDDs[0]
	r.Points = append(r.Points, answer.HeatPoint{TimeUnixNano: T0 + 30e9, HeatFigures: r.Latest})
	r.Blocks[0].Samples = append(r.Blocks[0].Samples, only.Heat[0])
	wantHeat(t, s, answer.HeatQuery{AppID: App, RDD: &rdd8, ColdFor: time.Minute}, want)

	if got, err := s.Heat(context.Background(), answer.HeatQuery{AppID: "application_0_0"}); err != nil || len(got.RDDs) != 0 {
		t.Fatalf("heat of an app without samples = %+v, %v; want none", got, err)
	}
	if _, err := s.Heat(context.Background(), answer.HeatQuery{}); !errors.Is(err, store.ErrInvalidQuery) {
		t.Fatalf("heat without app: %v, want ErrInvalidQuery", err)
	}
}

// testHeatValidated: a batch with a heat sample the questions could not
// use is refused whole.
func testHeatValidated(t *testing.T, be Backend) {
	s := be.open(t)
	bads := map[string]func(h *stratav1.HeatSample){
		"no app":         func(h *stratav1.HeatSample) { h.AppId = "" },
		"cold > covered": func(h *stratav1.HeatSample) { h.ColdBytes = h.CoveredBytes + 1 },
		"monitored > resolved": func(h *stratav1.HeatSample) {
			h.MonitoredBytes = u64p(h.ResolvedBytes + 1)
		},
		"rate NaN":     func(h *stratav1.HeatSample) { h.AccessRate = f64p(math.NaN()) },
		"negative age": func(h *stratav1.HeatSample) { h.ColdAgeSeconds = f64p(-1) },
		"covered > resolved": func(h *stratav1.HeatSample) {
			h.CoveredBytes = h.ResolvedBytes + 1
		},
		"unknown kind": func(h *stratav1.HeatSample) { h.SourceKind = 9 },
	}
	for name, bad := range bads {
		b := HeatBatch(1)
		bad(b.Heat[1])
		if _, err := s.Append(context.Background(), b); !errors.Is(err, store.ErrInvalidBatch) {
			t.Errorf("%s: append: %v, want ErrInvalidBatch", name, err)
		}
	}
	if got, err := s.Heat(context.Background(), answer.HeatQuery{AppID: App}); err != nil || len(got.RDDs) != 0 {
		t.Fatalf("after refused batches: heat %+v, %v; want none", got, err)
	}
	// What DAMON may say is kept: more bytes covered than monitored (the
	// target's ranges changed between the two), a rate above 1. The
	// monitored bytes are then at least the covered ones.
	b := &stratav1.Batch{NodeName: Node, BootId: Boot, Seq: 3, Heat: []*stratav1.HeatSample{heatCopy(HeatSamples()[1])}}
	b.Heat[0].MonitoredBytes, b.Heat[0].AccessRate = u64p(gib), f64p(1.25)
	MustAppend(t, s, b)
	got, err := s.Heat(context.Background(), answer.HeatQuery{AppID: App, ColdFor: time.Minute})
	if err != nil || len(got.RDDs) != 1 {
		t.Fatalf("heat = %+v, %v", got, err)
	}
	l := got.RDDs[0].Latest
	if l.MonitoredBytes != 2*gib || *l.ColdShare != 0.5 || *l.AccessRate != 1.25 || *l.AccessesPerSecGiB != 6.25 {
		t.Fatalf("latest = %s, want 2 GiB monitored, cold share 0.5, rate 1.25, 6.25 acc/s/GiB", figures(got.RDDs[0]))
	}
}
