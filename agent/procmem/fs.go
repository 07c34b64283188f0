package procmem

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ErrProcessGone reports that the process exited (or never existed) before
// or while its files were read.
var ErrProcessGone = errors.New("process gone")

// FS is the root of the kernel's file systems the readers open.
type FS struct {
	Proc string // procfs mount point, normally /proc
	Sys  string // sysfs mount point, normally /sys
}

// Default returns the FS of the running system: /proc and /sys.
func Default() FS { return FS{Proc: "/proc", Sys: "/sys"} }

// pageSize is the base page size of the running system in bytes.
var pageSize = uint64(os.Getpagesize())

// PageSize is the base page size of the running system in bytes.
func PageSize() uint64 { return pageSize }

func (f FS) procPath(elem ...string) string {
	return filepath.Join(append([]string{f.Proc}, elem...)...)
}

func (f FS) pidPath(pid int, file string) string {
	return f.procPath(strconv.Itoa(pid), file)
}

// gone maps the errors the kernel gives for a process that exited to
// ErrProcessGone, keeping the original error in the chain.
func gone(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%w: %w", ErrProcessGone, err)
	}
	return err
}
