package procmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// ErrBadMemInfo marks a /proc/meminfo without a readable MemTotal line.
var ErrBadMemInfo = errors.New("malformed meminfo")

// MemTotal reads MemTotal from /proc/meminfo, in bytes: the RAM the kernel
// manages (physical memory less what firmware and the kernel image reserve).
func (f FS) MemTotal() (uint64, error) {
	b, err := os.ReadFile(f.procPath("meminfo"))
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	return parseMemTotal(b)
}

// parseMemTotal finds "MemTotal:  N kB" (the kernel always writes kB, which
// are KiB) and returns N*1024.
func parseMemTotal(b []byte) (uint64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		val, ok := bytes.CutPrefix(line, []byte("MemTotal:"))
		if !ok {
			continue
		}
		num, unit, _ := bytes.Cut(bytes.TrimSpace(val), []byte(" "))
		if u := string(bytes.TrimSpace(unit)); u != "kB" {
			return 0, fmt.Errorf("parse meminfo: MemTotal unit %q: %w", u, ErrBadMemInfo)
		}
		n, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil || n > 1<<54 {
			return 0, fmt.Errorf("parse meminfo: MemTotal %q: %w", num, ErrBadMemInfo)
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("parse meminfo: no MemTotal line: %w", ErrBadMemInfo)
}

// BootID reads /proc/sys/kernel/random/boot_id, the kernel's random id of
// this boot (a UUID), without its newline.
func (f FS) BootID() (string, error) {
	b, err := os.ReadFile(f.procPath("sys", "kernel", "random", "boot_id"))
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	id := string(bytes.TrimSpace(b))
	if id == "" {
		return "", errors.New("read boot id: empty")
	}
	return id, nil
}
