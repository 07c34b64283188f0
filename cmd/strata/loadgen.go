package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratatrace/strata/test/loadgen"
)

func init() {
	register(command{name: "loadgen", args: "[--collector ADDR[,ADDR...]] [--agents N] [--duration DURATION] [--verify] [flags]",
		summary: "play N simulated agents against collectors and report what was stored", run: runLoadgen,
		help: `Simulated agents push batches of synthetic records to the collectors (--collector, comma-separated)
as the real agent does, then every batch is awaited; the throughput is printed, and with --verify
every record is read back: 0 lost, 0 duplicated.

example:
  strata loadgen --collector 127.0.0.1:7070 --agents 8 --duration 30s --verify`})
}

// loadgenReport is `strata loadgen -o json`'s one line.
type loadgenReport struct {
	Agents          int     `json:"agents"`
	Collectors      string  `json:"collectors"`
	RecordsPerBatch int     `json:"records_per_batch"`
	PagesPerRecord  int     `json:"pages_per_record"`
	ProducedSeconds float64 `json:"produced_seconds"`
	DrainedSeconds  float64 `json:"drained_seconds"`
	Batches         uint64  `json:"batches"`
	Duplicates      uint64  `json:"duplicates"`
	Records         uint64  `json:"records"`
	Pages           uint64  `json:"pages"`
	Runs            uint64  `json:"runs"`
	Reconnects      uint64  `json:"reconnects"`
	RecordsPerSec   float64 `json:"records_per_sec"`
	PagesPerSec     float64 `json:"pages_per_sec"`
	RunsPerSec      float64 `json:"runs_per_sec"`
	App             string  `json:"app"`
	PeakRSSKiB      int64   `json:"collector_peak_rss_kib,omitempty"`
	Lost            *uint64 `json:"lost,omitempty"`
	Duplicated      *uint64 `json:"duplicated,omitempty"`
}

func runLoadgen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("strata loadgen", flag.ContinueOnError)
	cf := addClientFlags(fs, true)
	var (
		cfg    loadgen.Config
		verify bool
		rssPID int
	)
	fs.IntVar(&cfg.Agents, "agents", 16, "`N` simulated agents (machines)")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long agents produce batches (`DURATION`; then every batch is awaited)")
	fs.IntVar(&cfg.BatchesPerAgent, "batches", 0, "`N` batches per agent instead of a duration")
	fs.IntVar(&cfg.RecordsPerBatch, "records", 64, "`N` records per batch")
	fs.IntVar(&cfg.PagesPerRecord, "pages", 1024, "`N` pages per record (block)")
	fs.IntVar(&cfg.RunPages, "run-pages", 0, "`N` pages per run: 0 = THPs and runs of 1-32 pages, as agents see them; 1 = every page its own run")
	fs.IntVar(&cfg.Window, "window", 0, "`N` batches in flight per agent (0 = the agent's default)")
	fs.StringVar(&cfg.App, "app", "", "application `ID` of the records (default: one per run)")
	fs.BoolVar(&verify, "verify", false, "afterwards read every record back through the first collector's query service: 0 lost, 0 duplicated")
	fs.IntVar(&rssPID, "collector-pid", 0, "report the peak resident memory of process `PID` (the collector) during the run")
	if ok, err := parseClientFlags(fs, cf, args, stdout, stderr); !ok {
		return err
	}
	for _, c := range strings.Split(cf.collector, ",") {
		if c = strings.TrimSpace(c); c != "" {
			cfg.Collectors = append(cfg.Collectors, c)
		}
	}
	// The agents push with the certificate (role agent); --verify reads
	// with the token (role client) when one is given: a certificate wins
	// over a token at the collector.
	creds, err := cf.dialOptions()
	if err != nil {
		return err
	}
	cfg.Credentials = creds
	vf := *cf
	if vf.token != "" || vf.tokenFile != "" {
		vf.tls.Cert, vf.tls.Key = "", ""
	}
	verifyCreds, err := vf.dialOptions()
	if err != nil {
		return err
	}
	var peak int64
	cfg.Progress = func(t loadgen.Totals) {
		if rssPID > 0 {
			peak = max(peak, loadgen.RSSKiB(rssPID, true))
		}
		rec, pages, _ := t.Rate(t.Elapsed)
		fmt.Fprintf(stderr, "%6.1fs  %d batches  %.0f records/s  %.0f pages/s  %d reconnects\n",
			t.Elapsed.Seconds(), t.Batches, rec, pages, t.Reconnects)
	}
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	rec, pages, runs := res.Rate(res.Produced + res.Drained)
	rep := loadgenReport{Agents: len(res.PerNode), Collectors: cf.collector, RecordsPerBatch: res.RecordsPerBatch,
		PagesPerRecord: cfg.PagesPerRecord, ProducedSeconds: res.Produced.Seconds(), DrainedSeconds: res.Drained.Seconds(),
		Batches: res.Batches, Duplicates: res.Duplicates, Records: res.Records, Pages: res.Pages, Runs: res.Runs,
		Reconnects: res.Reconnects, RecordsPerSec: rec, PagesPerSec: pages, RunsPerSec: runs, App: res.App, PeakRSSKiB: peak}
	if rssPID > 0 {
		rep.PeakRSSKiB = max(peak, loadgen.RSSKiB(rssPID, true))
	}
	var check *loadgen.Check
	if verify {
		c, err := loadgen.Verify(ctx, cfg.Collectors[0], res, verifyCreds...)
		if err != nil {
			return err
		}
		check = &c
		rep.Lost, rep.Duplicated = &c.Lost, &c.Duplicated
	}
	if cf.output.json() {
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else {
		fmt.Fprintf(stdout, "%d agents -> %s: %d batches (%d duplicates), %d records, %d pages, %d runs in %.1fs + %.1fs drain\n",
			rep.Agents, rep.Collectors, rep.Batches, rep.Duplicates, rep.Records, rep.Pages, rep.Runs, rep.ProducedSeconds, rep.DrainedSeconds)
		fmt.Fprintf(stdout, "%.0f records/s, %.0f pages/s, %.0f runs/s stored; app %s\n", rec, pages, runs, res.App)
		if rep.PeakRSSKiB > 0 {
			fmt.Fprintf(stdout, "collector peak RSS %d MiB\n", rep.PeakRSSKiB/1024)
		}
		if check != nil {
			fmt.Fprintf(stdout, "verify: %s\n", check)
		}
	}
	if check != nil && !check.OK() {
		return errors.New("loadgen: the store does not hold exactly what was acknowledged: " + check.String())
	}
	return nil
}
