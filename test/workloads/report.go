package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Report is the part of `strata report -o json` the harness reads: the
// CLI's output contract, decoded as a user's script would.
type Report struct {
	App        string `json:"app"`
	Name       string `json:"name"`
	Severity   string `json:"severity"`
	Occupation struct {
		PeakRDDBytes  uint64   `json:"peak_rdd_bytes"`
		PeakRSSBytes  uint64   `json:"peak_rss_bytes"`
		MemTotalBytes uint64   `json:"mem_total_bytes"`
		OfRSS         *float64 `json:"of_rss"`
		OfNode        *float64 `json:"of_node"`
	} `json:"occupation"`
	RDDs      []RDDReport `json:"rdds"`
	Executors []struct {
		ExecutorID    string   `json:"executor_id"`
		PeakRDDBytes  uint64   `json:"peak_rdd_bytes"`
		PeakRSSBytes  uint64   `json:"peak_rss_bytes"`
		MemTotalBytes uint64   `json:"mem_total_bytes"`
		OfRSS         *float64 `json:"of_rss"`
		OfNode        *float64 `json:"of_node"`
		RSSSamples    uint32   `json:"rss_samples"`
	} `json:"executors"`
	PageWalk []struct {
		ExecutorID   string   `json:"executor_id"`
		PMUStatus    string   `json:"pmu_status"`
		WalkPct      *float64 `json:"walk_pct"`
		WalkPctRead  *float64 `json:"walk_pct_read"`
		WalkPctWrite *float64 `json:"walk_pct_write"`
		MinorFaults  uint64   `json:"minor_faults"`
		MajorFaults  uint64   `json:"major_faults"`
		RDDFaults    uint64   `json:"rdd_faults"`
	} `json:"page_walk"`
}

// RDDReport is one RDD of a Report.
type RDDReport struct {
	RDD     int32  `json:"rdd"`
	Blocks  uint64 `json:"blocks"`
	Bytes   uint64 `json:"bytes"`
	Pages   uint64 `json:"pages"`
	Present uint64 `json:"present"`
	Swapped uint64 `json:"swapped"`
	THP     uint64 `json:"thp"`
	Reads   uint64 `json:"reads"`
	Writes  uint64 `json:"writes"`
	Faults  struct {
		Read, Write, Exec, Major, Unclassified uint64
	} `json:"faults"`
	ObjectGraph bool `json:"object_graph"`
	// ResolvedBytes: the bytes of the RDD's buffers and walked objects;
	// Resolved says how, in words ("walked 97.2 %").
	ResolvedBytes uint64 `json:"resolved_bytes"`
	Resolved      string `json:"resolved"`
}

// Report runs `strata report --app app -o json` against n's collector.
func (n *Node) Report(ctx context.Context, app string) (Report, error) {
	out, err := n.Strata(ctx, "report", "--app", app, "-o", "json")
	if err != nil {
		return Report{}, err
	}
	var r Report
	if err := json.Unmarshal(out, &r); err != nil {
		return Report{}, fmt.Errorf("decode report of %s: %w", app, err)
	}
	return r, nil
}

// RecordCount sums what `strata records --app app -o json` lists: the
// app's records and the pages they resolved.
func (n *Node) RecordCount(ctx context.Context, app string) (records, pages uint64, err error) {
	out, err := n.Strata(ctx, "records", "--app", app, "-o", "json")
	if err != nil {
		return 0, 0, err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var r struct {
			Pages uint64 `json:"pages"`
		}
		if err := dec.Decode(&r); err != nil {
			return 0, 0, fmt.Errorf("decode records of %s: %w", app, err)
		}
		records++
		pages += r.Pages
	}
	return records, pages, nil
}
