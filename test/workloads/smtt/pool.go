package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratatrace/strata/test/workloads"
)

// table is what a run writes as JSON beside its table (smtt-SERIES.json).
type table struct {
	Spark   string `json:"spark"`
	Size    string `json:"size"`
	Storage string `json:"storage"`
	// HookOptions and AgentArgs are the -hook-options and -agent-args of
	// the traced runs.
	HookOptions string `json:"hook_options,omitempty"`
	AgentArgs   string `json:"agent_args,omitempty"`
	Pairs       int    `json:"pairs"`
	// Strata is the version of the binaries (strata version), Started
	// when the first run began (RFC 3339).
	Strata   string `json:"strata,omitempty"`
	Started  string `json:"started,omitempty"`
	Rows     []*row `json:"rows"`
	Findings any    `json:"findings"`
	// PooledFrom names the tables a pooled one was made of.
	PooledFrom []string `json:"pooled_from,omitempty"`
}

// pool reads tables that earlier runs wrote as JSON, all of one Spark
// version, size, storage level, hook options and agent flags, and writes one table of all their pairs
// to stdout and to c.out/smtt-VERSION-pooled.{txt,json}: each workload's
// runs put together and its ratios, spread and intervals computed anew
// over them. The columns that describe one traced run (records, pages,
// occupation, faults, page-walk share, severity) come from the last file
// that has the workload. It runs nothing and checks no history server.
func pool(files []string, c config, stdout io.Writer) error {
	if len(files) == 0 {
		return errors.New("check flags: -pool needs the JSON files of earlier runs as arguments")
	}
	var first table
	var order, names, from []string // workloads in order met; the files' names; their lines under "Pooled from:"
	byName := map[string]*row{}
	for i, f := range files {
		var t table
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read table: %w", err)
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return fmt.Errorf("read table %s: %w", f, err)
		}
		if len(t.Rows) == 0 || t.Spark == "" {
			return fmt.Errorf("read table %s: no Spark version or no workloads in it", f)
		}
		names = append(names, filepath.Base(f))
		from = append(from, fmt.Sprintf("  %s (Strata %s, started %s)\n", filepath.Base(f), orDash(t.Strata), orDash(t.Started)))
		if i == 0 {
			first = t
		} else if k, k0 := t.kind(), first.kind(); k != k0 {
			return fmt.Errorf("pool tables: %s is %s; %s is %s", files[0], k0, f, k)
		}
		for _, r := range t.Rows {
			if len(r.With) != len(r.Without) || len(r.PairRatios) != len(r.With) {
				return fmt.Errorf("read table %s: %s has %d runs with tracing, %d without and %d pair ratios",
					f, r.Workload, len(r.With), len(r.Without), len(r.PairRatios))
			}
			p := byName[r.Workload]
			if p == nil {
				p = &row{Workload: r.Workload}
				byName[r.Workload] = p
				order = append(order, r.Workload)
			}
			p.add(r)
		}
	}
	rows := make([]*row, len(order))
	c.pairs, c.pairsMax = 0, 0
	for i, w := range order {
		r := byName[w]
		p := workloads.Paired{WallWithout: durations(r.Without), WallWith: durations(r.With),
			CPUWithout: durations(r.CPUWithout), CPUWith: durations(r.CPUWith)}
		r.Ratio, r.CPURatio, r.Spread = p.WallRatio(), p.CPURatio(), workloads.Spread(p.WallWithout)
		if i == 0 || len(r.PairRatios) < c.pairs {
			c.pairs = len(r.PairRatios)
		}
		c.pairsMax = max(c.pairsMax, len(r.PairRatios))
		rows[i] = r
	}
	c.size, c.storage, c.tables, c.hookOptions = first.Size, first.Storage, len(files), first.HookOptions
	if c.storage == storageName("") {
		c.storage = ""
	}
	var out strings.Builder
	writeTable(&out, first.Spark, c, rows)
	fmt.Fprintf(&out, "\nPooled from:\n%s", strings.Join(from, ""))
	io.WriteString(stdout, out.String())
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	base := filepath.Join(c.out, "smtt-"+first.Spark+"-pooled")
	if err := os.WriteFile(base+".txt", []byte(out.String()), 0o644); err != nil {
		return err
	}
	first.Pairs, first.Rows, first.Findings, first.PooledFrom, first.Strata, first.Started = c.pairs, rows, nil, names, "", ""
	js, _ := json.MarshalIndent(first, "", "  ")
	if err := os.WriteFile(base+".json", js, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s.{txt,json}\n", base)
	return nil
}

// kind says what runs a table holds, for pooling only runs of one kind.
func (t table) kind() string {
	return fmt.Sprintf("Spark %s, size %s, storage %s, hook options %q, agent flags %q", t.Spark, t.Size, t.Storage, t.HookOptions, t.AgentArgs)
}

// add puts r's runs after p's, and r's description of its traced run in
// place of p's.
func (p *row) add(r *row) {
	p.Without, p.With = append(p.Without, r.Without...), append(p.With, r.With...)
	p.PairRatios = append(p.PairRatios, r.PairRatios...)
	p.OutsideWithout, p.OutsideWith = append(p.OutsideWithout, r.OutsideWithout...), append(p.OutsideWith, r.OutsideWith...)
	p.WorkWithout, p.WorkWith = append(p.WorkWithout, r.WorkWithout...), append(p.WorkWith, r.WorkWith...)
	p.CPUWithout, p.CPUWith = append(p.CPUWithout, r.CPUWithout...), append(p.CPUWith, r.CPUWith...)
	p.App, p.Records, p.Pages, p.RDDs = r.App, r.Records, r.Pages, r.RDDs
	p.OfRSS, p.OfNode, p.RDDFaults, p.RDDFillFaults = r.OfRSS, r.OfNode, r.RDDFaults, r.RDDFillFaults
	p.PageWalk, p.Severity, p.Output = r.PageWalk, r.Severity, r.Output
}
