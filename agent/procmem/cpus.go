package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// maxCPUs bounds a CPU number read from sysfs.
const maxCPUs = 1 << 16

// ErrBadCPUList marks a cpulist file that is not the kernel's list format.
var ErrBadCPUList = errors.New("malformed cpu list")

// LoadCPUNodes reads /sys/devices/system/node/node*/cpulist and returns the
// NUMA node of every CPU, indexed by CPU number; -1 for a CPU no node lists.
// It fails with ErrNoNodeInfo when sysfs has no node directory.
func (f FS) LoadCPUNodes() ([]int32, error) {
	nodeDir := filepath.Join(f.Sys, "devices", "system", "node")
	dirs, err := os.ReadDir(nodeDir)
	if err != nil {
		return nil, fmt.Errorf("read node directory: %w: %w", ErrNoNodeInfo, err)
	}
	var out []int32
	for _, d := range dirs {
		node, ok := parseIndexedName(d.Name(), "node")
		if !ok {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(nodeDir, d.Name(), "cpulist"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read cpulist: %w", err)
		}
		cpus, err := parseCPUList(raw)
		if err != nil {
			return nil, fmt.Errorf("parse %s/cpulist: %w", d.Name(), err)
		}
		for _, c := range cpus {
			for len(out) <= c {
				out = append(out, -1)
			}
			out[c] = int32(node)
		}
	}
	return out, nil
}

// parseCPUList decodes the kernel's list format of CPUs and nodes (cpulist,
// node/online, node/has_memory: "0-3,8,10-11\n"; an
// empty list for a memory-only node).
func parseCPUList(b []byte) ([]int, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, nil
	}
	var cpus []int
	for _, part := range bytes.Split(b, []byte{','}) {
		lo, hi, isRange := bytes.Cut(part, []byte{'-'})
		a, err := strconv.Atoi(string(lo))
		if err != nil || a < 0 || a >= maxCPUs {
			return nil, fmt.Errorf("cpu list item %q: %w", part, ErrBadCPUList)
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(string(hi)); err != nil || z < a || z >= maxCPUs {
				return nil, fmt.Errorf("cpu list item %q: %w", part, ErrBadCPUList)
			}
		}
		if len(cpus)+z-a >= maxCPUs {
			return nil, fmt.Errorf("cpu list longer than %d: %w", maxCPUs, ErrBadCPUList)
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
