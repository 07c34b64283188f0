package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stratatrace/strata/agent/procmem"
	"github.com/stratatrace/strata/agent/resolver"
	"github.com/stratatrace/strata/agent/resolver/resolvertest"
	"github.com/stratatrace/strata/test/testenv"
)

// envCLI makes the test binary run `strata` with the arguments in the
// variable (space separated) and exit: TestResolveCLINonRoot runs it as
// another user.
const envCLI = "STRATA_RESOLVE_CLI_ARGS"

func init() {
	if args := os.Getenv(envCLI); args != "" {
		if err := run(context.Background(), strings.Fields(args), os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "strata:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func resolveCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"resolve"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

// jsonPages decodes JSON lines, checking the keys users script against.
func jsonPages(t *testing.T, out string) []map[string]any {
	t.Helper()
	var pages []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"vaddr", "present", "swapped", "pfn", "paddr", "numa_node", "thp", "flags"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("line %q lacks %q", sc.Text(), k)
			}
		}
		pages = append(pages, m)
	}
	return pages
}

func hexArg(v uint64) string { return fmt.Sprintf("%#x", v) }

func TestResolveCLI(t *testing.T) {
	testenv.RequireRoot(t)
	c := resolvertest.Start(t, []resolvertest.Region{
		{Name: "full", Pages: 64},
		{Name: "half", Pages: 64, Touch: resolvertest.TouchHalf},
		{Name: "thp", Pages: 1024, THP: true},
		{Name: "hole", Hole: true},
	}, nil)
	pid := strconv.Itoa(c.Pid)

	t.Run("json", func(t *testing.T) {
		out, _, err := resolveCLI(t, "--pid", pid, "--addr", hexArg(c.Addr["full"]), "--len", "256K", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		pages := jsonPages(t, out)
		if len(pages) != 64 {
			t.Fatalf("%d pages, want 64", len(pages))
		}
		_, nodesErr := procmem.Default().LoadNodeMap()
		haveNodes := nodesErr == nil
		// Compare with pagemap read independently, one page at a time.
		pm, err := procmem.Default().OpenPagemap(c.Pid)
		if err != nil {
			t.Fatal(err)
		}
		defer pm.Close()
		for i, p := range pages {
			va := c.Addr["full"] + uint64(i)*procmem.PageSize()
			var e [1]procmem.Entry
			if err := pm.Read(e[:], va); err != nil {
				t.Fatal(err)
			}
			pfn := uint64(p["pfn"].(float64))
			if p["vaddr"] != hexArg(va) || p["present"] != true || p["swapped"] != false || pfn != e[0].PFN() ||
				p["paddr"] != hexArg(pfn*procmem.PageSize()) || (haveNodes && p["numa_node"].(float64) < 0) {
				t.Fatalf("page %d: %v, pagemap pfn %#x", i, p, e[0].PFN())
			}
			if !strings.Contains(fmt.Sprint(p["flags"]), "anon") {
				t.Errorf("page %d flags %v: want anon", i, p["flags"])
			}
		}
	})
	t.Run("half", func(t *testing.T) {
		out, _, err := resolveCLI(t, "--pid", pid, "--addr", hexArg(c.Addr["half"]), "--len", "0x40000", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		present := 0
		for _, p := range jsonPages(t, out) {
			if p["present"] == true {
				present++
			} else if p["pfn"].(float64) != 0 || p["numa_node"].(float64) != -1 {
				t.Errorf("absent page %v", p)
			}
		}
		if present != 32 {
			t.Errorf("%d present, want 32", present)
		}
	})
	t.Run("thp", func(t *testing.T) {
		if kb, err := c.AnonHugePages(c.Addr["thp"]); err != nil || kb < 4096 {
			t.Skipf("skipping: THP not granted (AnonHugePages %d KiB, %v)", kb, err)
		}
		out, _, err := resolveCLI(t, "--pid", pid, "--addr", hexArg(c.Addr["thp"]), "--len", "4M", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range jsonPages(t, out) {
			flags := fmt.Sprint(p["flags"])
			want := "compound_tail"
			if i%512 == 0 {
				want = "compound_head"
			}
			if p["thp"] != true || p["folio_pages"].(float64) != 512 || !strings.Contains(flags, "thp") || !strings.Contains(flags, want) {
				t.Fatalf("page %d: %v", i, p)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		out, _, err := resolveCLI(t, "--pid", pid, "--addr", hexArg(c.Addr["hole"]), "--len", "12288")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 6 || !strings.HasPrefix(lines[0], "VADDR") || !strings.Contains(lines[2], "unmapped") ||
			!strings.Contains(lines[1], "present") || !strings.Contains(lines[5], "3 pages: 2 present, 0 swapped, 1 unmapped") {
			t.Errorf("table:\n%s", out)
		}
	})
	t.Run("gone", func(t *testing.T) {
		dead := resolvertest.Start(t, []resolvertest.Region{{Name: "a", Pages: 1}}, nil)
		dead.Stop()
		_, _, err := resolveCLI(t, "--pid", strconv.Itoa(dead.Pid), "--addr", "0x1000", "--len", "4096")
		if !errors.Is(err, resolver.ErrProcessGone) {
			t.Errorf("dead pid: %v, want ErrProcessGone", err)
		}
	})
}

func TestResolveCLIFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--pid", "1", "--addr", "0x1000"},
		{"--pid", "1", "--addr", "zz", "--len", "1"},
		{"--pid", "1", "--addr", "0x1000", "--len", "1T"},
		{"--pid", "1", "--addr", "0x1000", "--len", "1", "-o", "xml"},
		{"--bogus"},
	} {
		if _, _, err := resolveCLI(t, args...); err == nil {
			t.Errorf("resolve %q: no error", args)
		}
	}
	for in, want := range map[string]uint64{"4096": 4096, "0x1000": 4096, "4K": 4096, "2m": 2 << 20, "1G": 1 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v", in, got, err)
		}
	}
}

// TestResolveCLINonRoot runs `strata resolve` as uid 65534 against a process
// of the same user: pages are present but the PFNs hidden, and the command
// says so instead of printing zeros as if they were frame numbers.
func TestResolveCLINonRoot(t *testing.T) {
	testenv.RequireRoot(t) // to switch to another uid
	bin := resolvertest.PublicBinary(t)
	c := resolvertest.StartBinary(t, bin, []resolvertest.Region{{Name: "a", Pages: 8}}, resolvertest.Nobody())
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), envCLI+"=resolve --pid "+strconv.Itoa(c.Pid)+" --addr "+hexArg(c.Addr["a"])+" --len 32K -o json")
	cmd.SysProcAttr = resolvertest.Nobody()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "PFNs need CAP_SYS_ADMIN") {
		t.Errorf("stderr %q: want the CAP_SYS_ADMIN warning", stderr.String())
	}
	pages := jsonPages(t, string(out))
	if len(pages) != 8 {
		t.Fatalf("%d pages, want 8", len(pages))
	}
	for _, p := range pages {
		if p["present"] != true || p["pfn_hidden"] != true || p["pfn"].(float64) != 0 || p["flags_known"] != false {
			t.Errorf("page %v: want present, pfn_hidden, no flags", p)
		}
	}
}

// TestResolveCLINoFlags resolves without kpageflags: PFNs as pagemap gives
// them, flags unknown, a warning that says they were not read, and THPs
// still THPs of 512 pages where PAGEMAP_SCAN finds their PMD maps.
func TestResolveCLINoFlags(t *testing.T) {
	testenv.RequireRoot(t)
	c := resolvertest.Start(t, []resolvertest.Region{
		{Name: "4k", Pages: 64},
		{Name: "thp", Pages: 1024, THP: true},
	}, nil)
	pid := strconv.Itoa(c.Pid)
	out, errOut, err := resolveCLI(t, "--pid", pid, "--addr", hexArg(c.Addr["4k"]), "--len", "256K", "--no-flags", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "not read") {
		t.Errorf("stderr %q: want the flags-not-read warning", errOut)
	}
	pm, err := procmem.Default().OpenPagemap(c.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	pages := jsonPages(t, out)
	if len(pages) != 64 {
		t.Fatalf("%d pages, want 64", len(pages))
	}
	for i, p := range pages {
		var e [1]procmem.Entry
		if err := pm.Read(e[:], c.Addr["4k"]+uint64(i)*procmem.PageSize()); err != nil {
			t.Fatal(err)
		}
		if p["present"] != true || uint64(p["pfn"].(float64)) != e[0].PFN() || p["flags_known"] != false || p["flags_not_read"] != true || len(p["flags"].([]any)) != 0 {
			t.Fatalf("page %d: %v, pagemap pfn %#x", i, p, e[0].PFN())
		}
	}
	if kb, err := c.AnonHugePages(c.Addr["thp"]); err != nil || kb < 4096 {
		t.Skipf("skipping THP: not granted (AnonHugePages %d KiB, %v)", kb, err)
	}
	out, _, err = resolveCLI(t, "--pid", pid, "--addr", hexArg(c.Addr["thp"]), "--len", "4M", "--no-flags", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range jsonPages(t, out) {
		if p["thp"] != true || p["folio_pages"].(float64) != 512 || p["flags_known"] != false {
			t.Fatalf("page %d: %v (a kernel without PAGEMAP_SCAN cannot tell)", i, p)
		}
	}
}
