package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/stratatrace/strata/collector/query/jsonform"
)

// Report is `strata report -o json`: the one JSON form of a report
// (docs/api.md), whose examples TestDocExamples holds to the encoder.
type Report = jsonform.Report

// RDDReport is one RDD of a Report.
type RDDReport = jsonform.RDD

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
