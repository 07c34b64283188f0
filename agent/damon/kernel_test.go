package damon

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeKernel is a sysfs tree in a temporary directory that grows the
// directories DAMON's sysfs interface makes when its nr_* files are
// written, and answers the state file's commands: enough of the kernel's
// side for the own mode's writes to land where the kernel has files.
type fakeKernel struct {
	t    *testing.T
	root string
	// writes are every write, "path value", in order.
	writes []string
	// heat gives a monitored region's nr_accesses and age when
	// update_schemes_tried_regions fills the tried regions, given its
	// target's pid_target (0 for paddr); nil: 0, 0.
	heat func(pid uint64, r Range) (nr, age uint64)
	// avail is what a new context's avail_operations lists; "" makes no
	// such file, as older kernels have none.
	avail string
	// fixedTried: update_schemes_tried_regions leaves the tried regions
	// the test made.
	fixedTried bool
}

func newFakeKernel(t *testing.T) *fakeKernel {
	f := &fakeKernel{t: t, root: t.TempDir(), avail: "vaddr\nfvaddr\npaddr"}
	f.file("kdamonds/nr_kdamonds", "0")
	return f
}

func (f *fakeKernel) sysfs() Sysfs { return Sysfs{Root: f.root, written: f.written} }

// file makes a file under the admin directory with its parents.
func (f *fakeKernel) file(rel, v string) {
	f.t.Helper()
	p := filepath.Join(f.root, adminDir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeKernel) files(dir string, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		f.file(dir+"/"+kv[i], kv[i+1])
	}
}

// dirs replaces the numbered directories under dir with n made by mk.
func (f *fakeKernel) dirs(dir string, n int, mk func(sub string)) {
	p := filepath.Join(f.root, adminDir, dir)
	ents, _ := os.ReadDir(p)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			os.RemoveAll(filepath.Join(p, e.Name()))
		}
	}
	for i := range n {
		mk(dir + "/" + strconv.Itoa(i))
	}
}

func (f *fakeKernel) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(f.root, adminDir, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// written is Sysfs.written: it records the write and does what the kernel
// would.
func (f *fakeKernel) written(rel, v string) {
	f.writes = append(f.writes, rel+" "+v)
	n, _ := strconv.Atoi(v)
	dir := filepath.ToSlash(filepath.Dir(rel))
	switch filepath.Base(rel) {
	case "nr_kdamonds":
		f.dirs("kdamonds", n, func(kd string) { f.files(kd, "state", "off", "pid", "-1", "contexts/nr_contexts", "0") })
	case "nr_contexts":
		f.dirs(dir, n, func(c string) {
			if f.avail != "" {
				f.file(c+"/avail_operations", f.avail)
			}
			f.files(c, "operations", "vaddr", "addr_unit", "1",
				"monitoring_attrs/intervals/sample_us", "5000", "monitoring_attrs/intervals/aggr_us", "100000",
				"monitoring_attrs/intervals/update_us", "1000000", "monitoring_attrs/intervals/intervals_goal/aggrs", "0",
				"monitoring_attrs/nr_regions/min", "10", "monitoring_attrs/nr_regions/max", "1000",
				"targets/nr_targets", "0", "schemes/nr_schemes", "0")
		})
	case "nr_targets":
		f.dirs(dir, n, func(tg string) { f.files(tg, "pid_target", "0", "regions/nr_regions", "0") })
	case "nr_regions":
		if strings.HasSuffix(dir, "/regions") {
			f.dirs(dir, n, func(r string) { f.files(r, "start", "0", "end", "0") })
		}
	case "nr_schemes":
		f.dirs(dir, n, func(sc string) {
			f.files(sc, "action", "pageout", "access_pattern/sz/min", "0", "access_pattern/sz/max", "18446744073709551615",
				"access_pattern/nr_accesses/min", "0", "access_pattern/nr_accesses/max", "0",
				"access_pattern/age/min", "0", "access_pattern/age/max", "0",
				"quotas/ms", "0", "quotas/bytes", "0", "filters/nr_filters", "0", "tried_regions/total_bytes", "0")
		})
	case "nr_filters":
		f.dirs(dir, n, func(fd string) {
			f.files(fd, "type", "anon", "matching", "N", "allow", "N", "memcg_path", "", "addr_start", "0", "addr_end", "0",
				"damon_target_idx", "0", "min", "0", "max", "0")
		})
	case "state":
		switch v {
		case "on", "commit":
			f.file(rel, "on")
		case "off":
			f.file(rel, "off")
		case "update_schemes_tried_regions":
			f.file(rel, "on")
			if !f.fixedTried {
				f.fillTried(dir)
			}
		default:
			f.t.Fatalf("state command %q", v)
		}
	}
}

// fillTried lists every monitored region of each scheme of kdamond kd as
// tried, numbered 0, 2, 4, ... as this kernel numbers them, in target
// order. A scheme's target filter (type target, matching N: it takes the
// other targets' regions and rejects them) leaves its target's alone.
func (f *fakeKernel) fillTried(kd string) {
	type region struct {
		Range
		target int
		pid    uint64
	}
	for c := range atoi(f.read(kd + "/contexts/nr_contexts")) {
		cd := fmt.Sprintf("%s/contexts/%d", kd, c)
		var rs []region
		for tg := range atoi(f.read(cd + "/targets/nr_targets")) {
			pid := uint64(atoi(f.read(fmt.Sprintf("%s/targets/%d/pid_target", cd, tg))))
			rd := fmt.Sprintf("%s/targets/%d/regions", cd, tg)
			for r := range atoi(f.read(rd + "/nr_regions")) {
				rs = append(rs, region{Range{uint64(atoi(f.read(fmt.Sprintf("%s/%d/start", rd, r)))),
					uint64(atoi(f.read(fmt.Sprintf("%s/%d/end", rd, r))))}, tg, pid})
			}
		}
		for s := range atoi(f.read(cd + "/schemes/nr_schemes")) {
			sd := fmt.Sprintf("%s/schemes/%d", cd, s)
			only := -1
			if atoi(f.read(sd+"/filters/nr_filters")) > 0 {
				if f.read(sd+"/filters/0/type") != "target" || f.read(sd+"/filters/0/matching") != "N" || f.read(sd+"/filters/0/allow") != "N" {
					f.t.Fatalf("scheme %s: a filter the fake kernel does not apply", sd)
				}
				only = atoi(f.read(sd + "/filters/0/damon_target_idx"))
			}
			td := sd + "/tried_regions"
			f.dirs(td, 0, nil)
			for i, r := range rs {
				if only >= 0 && r.target != only {
					continue
				}
				var nr, age uint64
				if f.heat != nil {
					nr, age = f.heat(r.pid, r.Range)
				}
				f.files(fmt.Sprintf("%s/%d", td, 2*i), "start", u(r.Start), "end", u(r.End), "nr_accesses", u(nr), "age", u(age), "sz_filter_passed", "0")
			}
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// thisMachine makes the tree this VM's kdamond 0 had on 2026-11-27: the
// environment's proactive reclaim, one paddr context over [4 GiB,
// 14.625 GiB) with one pageout scheme for regions accessed in at most one
// check for at least 12 aggregation intervals, and tried regions as given.
func (f *fakeKernel) thisMachine(tried ...Region) {
	f.file("kdamonds/nr_kdamonds", "1")
	kd := "kdamonds/0"
	f.files(kd, "state", "on", "pid", "77", "contexts/nr_contexts", "1")
	cd := kd + "/contexts/0"
	f.files(cd, "operations", "paddr", "avail_operations", "paddr", "addr_unit", "1",
		"monitoring_attrs/intervals/sample_us", "500000", "monitoring_attrs/intervals/aggr_us", "5000000",
		"monitoring_attrs/intervals/update_us", "60000000", "monitoring_attrs/intervals/intervals_goal/aggrs", "0",
		"monitoring_attrs/nr_regions/min", "1024", "monitoring_attrs/nr_regions/max", "8192",
		"targets/nr_targets", "1", "targets/0/pid_target", "0", "targets/0/regions/nr_regions", "1",
		"targets/0/regions/0/start", "4294967296", "targets/0/regions/0/end", "15703474176",
		"schemes/nr_schemes", "1")
	sc := cd + "/schemes/0"
	f.files(sc, "action", "pageout", "access_pattern/sz/min", "0", "access_pattern/sz/max", "18446744073709551615",
		"access_pattern/nr_accesses/min", "0", "access_pattern/nr_accesses/max", "1",
		"access_pattern/age/min", "12", "access_pattern/age/max", "4294967295",
		"quotas/ms", "50", "quotas/bytes", "134217728", "filters/nr_filters", "0", "core_filters/nr_filters", "0",
		"ops_filters/nr_filters", "2", "tried_regions/total_bytes", "0")
	for i, r := range tried {
		f.files(fmt.Sprintf("%s/tried_regions/%d", sc, 2*i), "start", u(r.Start), "end", u(r.End),
			"nr_accesses", u(r.NrAccesses), "age", u(r.Age), "sz_filter_passed", "0")
	}
}
