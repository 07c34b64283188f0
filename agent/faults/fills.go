package faults

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf16"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// HookLibraryName is the file name of the JVM hook's native library, whose
// JNI natives fillBegin and fillEnd the fill probes attach to.
const HookLibraryName = "libstratahook.so"

// FillKey is the key the JVM hook marks a put with (Blocks.fillKey in
// jvmhook): 64-bit FNV-1a over the UTF-16 code units of the Spark block's
// name, one unit per step. Spark's block names are ASCII, so the name a
// REGISTER frame carries gives the same key.
func FillKey(name string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, u := range utf16.Encode([]rune(name)) {
		h ^= uint64(u)
		h *= 0x100000001b3
	}
	return h
}

// DefaultHookLibraries lists where the hook's library is installed, as
// `strata hook-opts` looks for it: jvmhook/ beside the running binary (a
// build's bin/), then /opt/strata/jvmhook.
func DefaultHookLibraries() []string {
	out := []string{filepath.Join("/opt/strata/jvmhook", HookLibraryName)}
	if exe, err := os.Executable(); err == nil {
		out = append([]string{filepath.Join(filepath.Dir(exe), "jvmhook", HookLibraryName)}, out...)
	}
	return out
}

// attachInstalledFills attaches the fill probes to the installed hook
// libraries that exist.
func (f *Faults) attachInstalledFills() {
	for _, lib := range f.cfg.HookLibraries {
		if _, err := os.Stat(lib); err != nil {
			continue
		}
		f.attachFills(lib, 0)
	}
}

// attachMappedFills attaches the fill probes to the hook library pid maps,
// reached through /proc/PID/root (the JVM may live in another mount
// namespace). A JVM without it mapped (the older -javaagent form loads the
// library later) gets them when a later session of it starts, or through an
// installed library.
func (f *Faults) attachMappedFills(pid uint32) {
	vmas, err := f.cfg.FS.Maps(int(pid))
	if err != nil {
		f.log.Debug("read maps for the fill probes", "pid", pid, "err", err)
		return
	}
	seen := map[string]bool{}
	for _, v := range vmas {
		if filepath.Base(v.Path) != HookLibraryName || seen[v.Path] {
			continue
		}
		seen[v.Path] = true
		f.attachFills(filepath.Join(f.cfg.FS.Proc, strconv.Itoa(int(pid)), "root", v.Path), pid)
	}
}

// attachFills attaches the fill probes to the library at path and says so
// once per file; a failure is logged, and fills then go uncounted.
func (f *Faults) attachFills(path string, pid uint32) {
	attached, err := f.t.AttachFills(path)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		f.log.Debug("fill probes not attached", "path", path, "pid", pid, "err", err)
	case err != nil:
		f.log.Warn("fill probes not attached; the faults of filling blocks go uncounted", "path", path, "pid", pid, "err", err)
	case attached:
		f.log.Info("fill probes attached", "path", path, "pid", pid)
	}
}

// ClaimFill implements annotator.Kernel: the faults of the put that stored
// the block of pid named name, once; nil when there are none (the put was
// not marked, or another range of the block claimed them).
func (f *Faults) ClaimFill(pid uint32, name string) *stratav1.FaultCounts {
	fill, ok, err := f.t.TakeFill(pid, FillKey(name))
	if err != nil {
		f.log.Debug("take fill", "pid", pid, "block", name, "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	return faultCounts(fill.Counters)
}
