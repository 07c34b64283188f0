package tracer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DAMONInfo says what DAMON can do for Strata on this node. Per-process
// hotness needs the sysfs interface and the vaddr operations set; paddr
// alone monitors physical memory, which needs RDD pages resolved to PFNs.
type DAMONInfo struct {
	Sysfs    bool // /sys/kernel/mm/damon/admin exists
	Kdamonds int  // kdamonds configured through sysfs (others' included)
	VAddr    bool // CONFIG_DAMON_VADDR, when /proc/config.gz says
	PAddr    bool // CONFIG_DAMON_PADDR
	Config   bool // whether /proc/config.gz could be read at all
}

// Status is "available" or "unavailable: <reason>" for per-process
// (virtual address) hotness.
func (d DAMONInfo) Status() string {
	switch {
	case !d.Sysfs:
		return "unavailable: no DAMON sysfs interface"
	case d.Config && !d.VAddr && d.PAddr:
		return "unavailable: DAMON has physical-address operations only (CONFIG_DAMON_VADDR not set)"
	case d.Config && !d.VAddr:
		return "unavailable: DAMON has no virtual-address operations (CONFIG_DAMON_VADDR not set)"
	}
	return "available"
}

// DAMONStatus inspects DAMON read-only: sysfsRoot/kernel/mm/damon/admin
// and procRoot/config.gz (normally /sys and /proc). It starts nothing.
func DAMONStatus(sysfsRoot, procRoot string) (DAMONInfo, error) {
	var d DAMONInfo
	admin := filepath.Join(sysfsRoot, "kernel", "mm", "damon", "admin")
	if _, err := os.Stat(admin); err == nil {
		d.Sysfs = true
		b, err := os.ReadFile(filepath.Join(admin, "kdamonds", "nr_kdamonds"))
		if err != nil {
			return d, fmt.Errorf("read damon status: %w", err)
		}
		if d.Kdamonds, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return d, fmt.Errorf("read damon status: nr_kdamonds: %w", err)
		}
	}
	f, err := os.Open(filepath.Join(procRoot, "config.gz"))
	if err != nil {
		return d, nil // no config exposed: capabilities unknown, not an error
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return d, fmt.Errorf("read damon status: config.gz: %w", err)
	}
	cfg, err := io.ReadAll(zr)
	if err != nil {
		return d, fmt.Errorf("read damon status: config.gz: %w", err)
	}
	opts := parseKernelConfig(cfg)
	d.Config = true
	d.VAddr = opts["CONFIG_DAMON_VADDR"] == "y"
	d.PAddr = opts["CONFIG_DAMON_PADDR"] == "y"
	return d, nil
}

// parseKernelConfig maps CONFIG_X to its value ("y", "m", "123", ...).
func parseKernelConfig(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.HasPrefix(k, "CONFIG_") {
			out[k] = v
		}
	}
	return out
}
