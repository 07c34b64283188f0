package damon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sysfs is DAMON's sysfs admin interface, kernel/mm/damon/admin under Root
// (normally /sys). Its exported methods open files; the parsers they call
// take bytes and fuzz.
type Sysfs struct {
	Root string
	// written, when set, is called after every successful write with the
	// path under the admin directory and the value: tests record the
	// writes, and emulate the directories the kernel makes.
	written func(rel, value string)
	// refuse, when set, is asked before every read and may fail it (tests
	// stand in for a kernel that answers EBUSY).
	refuse func(rel string) error
	// wait bounds how long a read or write waits out EBUSY; 0 is busyWait.
	wait time.Duration
}

// adminDir is DAMON's sysfs admin directory under the sysfs root.
const adminDir = "kernel/mm/damon/admin"

// path is rel (slash-separated, under the admin directory) on disk.
func (s Sysfs) path(rel string) string {
	return filepath.Join(s.Root, adminDir, filepath.FromSlash(rel))
}

// kdamondDir is the directory of kdamond k, relative to the admin directory.
func kdamondDir(k int) string { return "kdamonds/" + strconv.Itoa(k) }

// contextDir is the directory of context c of kdamond k.
func contextDir(k, c int) string { return kdamondDir(k) + "/contexts/" + strconv.Itoa(c) }

// busyWait bounds how long a read or write waits out EBUSY: the kernel
// gives it, to readers of a kdamond's state and pid too, while another
// writer holds DAMON's sysfs lock, which update_schemes_tried_regions
// holds for up to one aggregation interval.
var busyWait = 15 * time.Second

// retryBusy runs op until it does not fail with EBUSY, for s.wait (else
// busyWait) at most.
func (s Sysfs) retryBusy(op func() error) error {
	wait := s.wait
	if wait <= 0 {
		wait = busyWait
	}
	deadline := time.Now().Add(wait)
	for {
		err := op()
		if !busy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readFile reads a file, waiting out EBUSY.
func (s Sysfs) readFile(rel string) ([]byte, error) {
	var b []byte
	err := s.retryBusy(func() (err error) {
		if s.refuse != nil {
			if err := s.refuse(rel); err != nil {
				return err
			}
		}
		b, err = os.ReadFile(s.path(rel))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read damon %s: %w", rel, err)
	}
	return b, nil
}

// read returns the file's contents with surrounding space trimmed.
func (s Sysfs) read(rel string) (string, error) {
	b, err := s.readFile(rel)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// readUint reads a file holding one unsigned decimal number.
func (s Sysfs) readUint(rel string) (uint64, error) {
	b, err := s.readFile(rel)
	if err != nil {
		return 0, err
	}
	v, err := parseUint(b)
	if err != nil {
		return 0, fmt.Errorf("read damon %s: %w", rel, err)
	}
	return v, nil
}

// write writes value to an existing file in one write, as sysfs wants it,
// waiting out EBUSY; a path the kernel has not made is an error, never a
// new file.
func (s Sysfs) write(rel, value string) error {
	err := s.retryBusy(func() error {
		f, err := os.OpenFile(s.path(rel), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		_, err = f.Write([]byte(value))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write damon %s %q: %w", rel, value, err)
	}
	if s.written != nil {
		s.written(rel, value)
	}
	return nil
}

// writeUint writes an unsigned decimal number.
func (s Sysfs) writeUint(rel string, v uint64) error {
	return s.write(rel, strconv.FormatUint(v, 10))
}

// indexDirs lists the numbered directories in rel, in numeric order. The
// kernel numbers tried regions with gaps, so callers list rather than
// count.
func (s Sysfs) indexDirs(rel string) ([]int, error) {
	ents, err := os.ReadDir(s.path(rel))
	if err != nil {
		return nil, fmt.Errorf("list damon %s: %w", rel, err)
	}
	var out []int
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if i, err := strconv.Atoi(e.Name()); err == nil && i >= 0 {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// denied reports an error that says the files are root's.
func denied(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EPERM)
}

// busy reports the kernel's EBUSY: another writer holds DAMON's sysfs lock,
// or a kdamond runs where none may.
func busy(err error) bool { return errors.Is(err, syscall.EBUSY) }
