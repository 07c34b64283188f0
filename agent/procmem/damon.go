package procmem

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DAMONInfo says what the kernel's Data Access MONitor offers on this node.
// Per-process hotness needs the sysfs interface and the virtual-address
// operations set; the physical-address set alone monitors all of memory by
// PFN.
type DAMONInfo struct {
	Sysfs    bool // /sys/kernel/mm/damon/admin exists
	Kdamonds int  // kdamonds configured through sysfs (anyone's)
	Config   bool // /proc/config.gz could be read, so VAddr and PAddr are known
	VAddr    bool // CONFIG_DAMON_VADDR=y
	PAddr    bool // CONFIG_DAMON_PADDR=y
}

// Status is "available" or "unavailable: <reason>" for per-process
// (virtual address) monitoring. Without /proc/config.gz it says
// "available" when the sysfs interface exists, as the kernel may well have
// the operations set.
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

// DAMON inspects DAMON without starting anything: the sysfs directory
// /sys/kernel/mm/damon/admin (nr_kdamonds is root-only) and the kernel's
// configuration in /proc/config.gz, which many distributions do not expose
// (that is not an error: Config stays false).
func (f FS) DAMON() (DAMONInfo, error) {
	var d DAMONInfo
	admin := filepath.Join(f.Sys, "kernel", "mm", "damon", "admin")
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
	cfg, err := f.KernelConfig()
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("read damon status: %w", err)
	}
	d.Config = true
	d.VAddr = cfg["CONFIG_DAMON_VADDR"] == "y"
	d.PAddr = cfg["CONFIG_DAMON_PADDR"] == "y"
	return d, nil
}

// maxKernelConfig bounds the decompressed /proc/config.gz (a few hundred
// KiB in practice).
const maxKernelConfig = 16 << 20

// KernelConfig reads /proc/config.gz (CONFIG_IKCONFIG_PROC) into a map of
// CONFIG_X to its value ("y", "m", "123", "\"string\""); options that are
// "not set" are absent. A kernel that does not expose it gives an error
// wrapping os.ErrNotExist.
func (f FS) KernelConfig() (map[string]string, error) {
	file, err := os.Open(f.procPath("config.gz"))
	if err != nil {
		return nil, fmt.Errorf("read kernel config: %w", err)
	}
	defer file.Close()
	zr, err := gzip.NewReader(file)
	if err != nil {
		return nil, fmt.Errorf("read kernel config: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxKernelConfig))
	if err != nil {
		return nil, fmt.Errorf("read kernel config: %w", err)
	}
	return parseKernelConfig(b), nil
}

// parseKernelConfig maps each "CONFIG_X=value" line to its value; comments
// ("# CONFIG_X is not set") and other lines are skipped.
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
