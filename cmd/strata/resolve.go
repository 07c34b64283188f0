package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

func init() {
	register(command{name: "resolve", args: "--pid PID --addr ADDR --len BYTES [-o table|json] [--no-flags]",
		summary: "resolve a process's address range to pages locally (PFN, flags, NUMA)", run: runResolve,
		help: `Resolves a virtual address range of a process on this machine to its physical pages, without
an agent: one line per page with its PFN, physical address, NUMA node, state and kernel page
flags. PFNs and kpageflags need root (CAP_SYS_ADMIN).

example:
  strata resolve --pid 4242 --addr 0x7f0000000000 --len 2M`})
}

// resolvePage is one line of `strata resolve -o json`.
type resolvePage struct {
	VAddr      string   `json:"vaddr"`
	Present    bool     `json:"present"`
	Swapped    bool     `json:"swapped"`
	Unmapped   bool     `json:"unmapped"`
	PFN        uint64   `json:"pfn"`
	PAddr      string   `json:"paddr"`
	PFNHidden  bool     `json:"pfn_hidden"`
	NUMANode   int32    `json:"numa_node"`
	THP        bool     `json:"thp"`
	FolioPages uint32   `json:"folio_pages"`
	Exclusive  bool     `json:"exclusive"`
	FileShared bool     `json:"file_shared"`
	KPageCount uint64   `json:"kpagecount"`
	Flags      []string `json:"flags"`
	FlagsKnown bool     `json:"flags_known"`
	// FlagsNotRead: resolved with --no-flags, so FlagsKnown is false
	// because nobody asked.
	FlagsNotRead bool   `json:"flags_not_read,omitempty"`
	Raced        bool   `json:"raced"`
	SwapType     uint32 `json:"swap_type,omitempty"`
	SwapOffset   uint64 `json:"swap_offset,omitempty"`
}

func newResolvePage(p stratav1.Page, pageSize, folio uint64) resolvePage {
	is := func(s stratav1.PageState) bool { return p.Is(s) }
	out := resolvePage{
		VAddr:        fmt.Sprintf("%#x", p.VAddr),
		Present:      is(stratav1.PageState_PAGE_STATE_PRESENT),
		Swapped:      is(stratav1.PageState_PAGE_STATE_SWAPPED),
		Unmapped:     is(stratav1.PageState_PAGE_STATE_UNMAPPED),
		PFN:          p.PFN,
		PAddr:        fmt.Sprintf("%#x", p.PAddr(pageSize)),
		PFNHidden:    is(stratav1.PageState_PAGE_STATE_PFN_HIDDEN),
		NUMANode:     p.NUMANode,
		THP:          is(stratav1.PageState_PAGE_STATE_THP),
		FolioPages:   uint32(folio),
		Exclusive:    is(stratav1.PageState_PAGE_STATE_EXCLUSIVE),
		FileShared:   is(stratav1.PageState_PAGE_STATE_FILE_SHARED),
		KPageCount:   p.KPageCount,
		Flags:        stratav1.KPageFlagNames(p.KPageFlags),
		Raced:        is(stratav1.PageState_PAGE_STATE_RACED),
		FlagsNotRead: is(stratav1.PageState_PAGE_STATE_FLAGS_NOT_READ),
		SwapType:     p.SwapType,
		SwapOffset:   p.SwapOffset,
	}
	out.FlagsKnown = out.Present && !is(stratav1.PageState_PAGE_STATE_FLAGS_UNKNOWN)
	return out
}

type resolveFlags struct {
	pid     int
	addr    uint64
	length  uint64
	cpuNode int
	output  outputFormat
	noFlags bool
}

// parseSize reads a byte count: decimal or 0x hex, with an optional K, M or
// G suffix (powers of 1024).
func parseSize(s string) (uint64, error) {
	mult := uint64(1)
	if i := len(s) - 1; i > 0 && !strings.HasPrefix(s, "0x") {
		switch s[i] {
		case 'k', 'K':
			mult, s = 1<<10, s[:i]
		case 'm', 'M':
			mult, s = 1<<20, s[:i]
		case 'g', 'G':
			mult, s = 1<<30, s[:i]
		}
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, err
	}
	if v > ^uint64(0)/mult {
		return 0, fmt.Errorf("%s: too large", s)
	}
	return v * mult, nil
}

func runResolve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f resolveFlags
	var addr, length string
	fs := flag.NewFlagSet("strata resolve", flag.ContinueOnError)
	fs.IntVar(&f.pid, "pid", 0, "process id `PID` (required)")
	fs.StringVar(&addr, "addr", "", "start address `ADDR`, hex 0x... or decimal (required)")
	fs.StringVar(&length, "len", "", "length in `BYTES`; 0x hex or decimal, K/M/G suffixes allowed (required)")
	fs.IntVar(&f.cpuNode, "cpu-node", -1, "NUMA `NODE` of the accessing CPU; pages elsewhere are marked cross-node")
	f.output.name = "table"
	fs.StringVar(&f.output.name, "o", "table", "output `FORMAT`: table, or json (one object per page per line)")
	f.output.addNoHeaders(fs)
	fs.BoolVar(&f.noFlags, "no-flags", false, "skip kpageflags and kpagecount: PFN, node and PMD-mapped THPs for the cost of the pagemap read; flags show as unknown")
	if ok, err := parseFlags(fs, args, stdout, stderr); !ok {
		return err
	}
	var err error
	switch {
	case f.pid <= 0:
		err = errors.New("--pid is required")
	case addr == "":
		err = errors.New("--addr is required")
	case length == "":
		err = errors.New("--len is required")
	case f.output.name != "table" && f.output.name != "json":
		err = fmt.Errorf("-o %q: want table or json", f.output.name)
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err == nil {
		if f.addr, err = strconv.ParseUint(addr, 0, 64); err != nil {
			err = fmt.Errorf("--addr: %w", err)
		}
	}
	if err == nil {
		if f.length, err = parseSize(length); err != nil {
			err = fmt.Errorf("--len: %w", err)
		}
	}
	if err != nil {
		return badUsage("resolve", "%v", err)
	}
	return resolveLocal(ctx, f, stdout, stderr)
}

func resolveLocal(ctx context.Context, f resolveFlags, stdout, stderr io.Writer) error {
	r, err := resolver.New(procmem.Default(), resolver.Options{NoFlags: f.noFlags})
	if err != nil {
		return fmt.Errorf("start resolver: %w", err)
	}
	defer r.Close()
	req := []resolver.Request{{VAddr: f.addr, Length: f.length, CPUNode: int32(f.cpuNode)}}
	out := make([]resolver.Result, 1)
	if err := r.ResolveBatch(f.pid, req, out); err != nil {
		return err
	}
	res := out[0]
	if res.Err != nil {
		return res.Err
	}
	if res.Warning != nil {
		for _, w := range strings.Split(res.Warning.Error(), "\n") {
			fmt.Fprintln(stderr, "strata resolve: warning:", w)
		}
	}
	ps := procmem.PageSize()
	w := bufio.NewWriter(stdout)
	var tw *tabwriter.Writer
	var enc *json.Encoder
	if f.output.json() {
		enc = json.NewEncoder(w)
	} else {
		tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		f.output.comment(tw, "VADDR\tSTATE\tPFN\tPADDR\tNODE\tFOLIO\tCOUNT\tFLAGS")
	}
	for _, run := range res.Runs {
		if err := ctx.Err(); err != nil {
			return err
		}
		var werr error
		run.ForEachPage(ps, func(_ uint32, page stratav1.Page) bool {
			p := newResolvePage(page, ps, uint64(run.GetFolioPages()))
			if enc != nil {
				if werr = enc.Encode(p); werr != nil {
					werr = fmt.Errorf("write page: %w", werr)
					return false
				}
				return true
			}
			fmt.Fprintln(tw, tableRow(p))
			return true
		})
		if werr != nil {
			return werr
		}
	}
	if tw != nil {
		f.output.comment(tw, fmt.Sprintf("\n%d pages: %d present, %d swapped, %d unmapped, %d THP, %d raced, %d PFN hidden",
			res.Pages, res.Present, res.Swapped, res.Unmapped, res.THP, res.Raced, res.Hidden))
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// tableRow renders one page for the table output.
func tableRow(p resolvePage) string {
	var state []string
	for _, s := range []struct {
		on   bool
		name string
	}{
		{p.Present, "present"}, {p.Swapped, "swapped"}, {p.Unmapped, "unmapped"},
		{p.THP, "thp"}, {p.PFNHidden, "pfn-hidden"}, {p.Raced, "raced"},
		{p.Present && !p.FlagsKnown, "flags-unknown"},
	} {
		if s.on {
			state = append(state, s.name)
		}
	}
	if len(state) == 0 {
		state = append(state, "not-present")
	}
	pfn, paddr, node, count, flags := "-", "-", "-", "-", "-"
	if p.PFN != 0 {
		pfn, paddr = fmt.Sprintf("%#x", p.PFN), p.PAddr
	}
	if p.NUMANode >= 0 {
		node = strconv.Itoa(int(p.NUMANode))
	}
	if p.FlagsKnown {
		count = strconv.FormatUint(p.KPageCount, 10)
		flags = strings.Join(p.Flags, ",")
	}
	if p.Swapped {
		pfn = fmt.Sprintf("swap %d:%#x", p.SwapType, p.SwapOffset)
	}
	folio := "-"
	if p.FolioPages > 0 {
		folio = strconv.Itoa(int(p.FolioPages))
	}
	return strings.Join([]string{p.VAddr, strings.Join(state, ","), pfn, paddr, node, folio, count, flags}, "\t")
}
