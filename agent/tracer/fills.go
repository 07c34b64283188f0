package tracer

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The functions the fill probes attach to: the JVM hook's JNI natives
// Native.fillBegin(long key) and Native.fillEnd(int stored), which the
// hook calls around each MemoryStore put (jvmhook). The probes read their
// third argument (after JNIEnv* and jclass): the block's key, and whether
// the put stored the block.
const (
	FillBeginSymbol = "Java_org_stratatrace_hook_Native_fillBegin"
	FillEndSymbol   = "Java_org_stratatrace_hook_Native_fillEnd"
)

// Fill is a put that stored its block: the faults its thread took from the
// put's begin to its end, less those of puts nested in it.
type Fill struct {
	Counters           // WalkSamples stays 0
	End      time.Time // the put's end
}

// fillFile names an ELF file the fill probes are attached to, by device
// and inode: one file reached by two paths is attached once.
type fillFile struct{ dev, ino uint64 }

// fillMaxAge is how long a stored fill waits for its claim before the
// liveness sweep drops it: a REGISTER follows its put's end within
// milliseconds, unless the block was never registered.
const fillMaxAge = 5 * time.Minute

// AttachFills attaches the fill probes to the ELF file at path (the hook's
// libstratahook.so, as a hooked JVM maps it, or any file defining both
// symbols). It reports whether it attached them now: a file attached
// already (the same device and inode) is not attached again. The probes
// fire in every process that maps the file, from then on; a process that
// begins a fill is traced from its first begin.
func (t *Tracer) AttachFills(path string) (bool, error) {
	return t.attachFills(path, 0, 0)
}

// attachFills attaches the fill probes to path at the symbols' file
// offsets, or at begin and end when they are not 0 (tests: a binary whose
// symbol table was stripped).
func (t *Tracer) attachFills(path string, begin, end uint64) (bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false, fmt.Errorf("attach fill probes to %s: %w", path, err)
	}
	f := fillFile{uint64(st.Dev), st.Ino}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false, fmt.Errorf("attach fill probes: %w", ErrClosed)
	}
	if t.fillFiles[f] {
		return false, nil
	}
	if t.fillBegin == nil {
		begin, err := t.loadProgram(strataProgFillBegin)
		if err != nil {
			return false, fmt.Errorf("attach fill probes: %w", err)
		}
		end, err := t.loadProgram(strataProgFillEnd)
		if err != nil {
			return false, fmt.Errorf("attach fill probes: %w", err)
		}
		t.fillBegin, t.fillEnd = begin, end
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return false, fmt.Errorf("attach fill probes to %s: %w", path, err)
	}
	lb, err := ex.Uprobe(FillBeginSymbol, t.fillBegin, &link.UprobeOptions{Address: begin})
	if err != nil {
		return false, fmt.Errorf("attach fill probes to %s: %w", path, err)
	}
	le, err := ex.Uprobe(FillEndSymbol, t.fillEnd, &link.UprobeOptions{Address: end})
	if err != nil {
		lb.Close()
		return false, fmt.Errorf("attach fill probes to %s: %w", path, err)
	}
	t.closers = append(t.closers, lb, le)
	t.fillFiles[f] = true
	return true, nil
}

// TakeFill returns the stored fill of tgid's block of the given key and
// forgets it; ok is false when there is none.
func (t *Tracer) TakeFill(tgid uint32, key uint64) (_ Fill, ok bool, _ error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return Fill{}, false, fmt.Errorf("take fill: %w", ErrClosed)
	}
	var v strataFillDone
	err := t.maps[strataMapFillsDone].LookupAndDelete(&strataFillKey{Tgid: tgid, Key: key}, &v)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return Fill{}, false, nil
	}
	if err != nil {
		return Fill{}, false, fmt.Errorf("take fill: %w", err)
	}
	t.fillsClaimed++
	return t.fillOf(&v), true, nil
}

func (t *Tracer) fillOf(v *strataFillDone) Fill {
	c := v.C
	return Fill{
		Counters: Counters{Read: c.Read, Write: c.Write, Exec: c.Exec, Unclassified: c.Unclassified, Major: c.Major},
		End:      time.Unix(0, int64(v.EndNs)+t.monoOff.Load()),
	}
}

// dropFillsLocked forgets the stored fills that no claim took: those of
// tgid (every one when tgid is 0) and, when before is set, those that
// ended before it. They count in Stats.FillsUnclaimed. The caller holds
// mu.
func (t *Tracer) dropFillsLocked(tgid uint32, before time.Time) error {
	m := t.maps[strataMapFillsDone]
	var keys []strataFillKey
	var k strataFillKey
	var v strataFillDone
	it := m.Iterate()
	for it.Next(&k, &v) {
		if tgid != 0 && k.Tgid != tgid {
			continue
		}
		if !before.IsZero() && !t.fillOf(&v).End.Before(before) {
			continue
		}
		keys = append(keys, k)
	}
	errs := []error{it.Err()}
	for _, k := range keys {
		if err := m.Delete(&k); err == nil {
			t.fillsUnclaimed++
		} else if !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("drop fills: %w", err)
	}
	return nil
}

// sweepFills drops fills unclaimed for fillMaxAge (a block whose
// registration never came; an exit notice lost to a full ring).
func (t *Tracer) sweepFills(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if err := t.dropFillsLocked(0, now.Add(-fillMaxAge)); err != nil {
		t.log.Warn("sweep fills", "error", err)
	}
}
