package tracer

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// TestSampledFaultIP: a sampled fault's event carries the user instruction
// pointer of the access that faulted, for every fault program. The child
// writes one byte to each page of a block in one loop, so every event names
// one instruction, and that instruction is in the child's loop (this test
// binary's runChild closures, found through the child's /proc/PID/maps).
func TestSampledFaultIP(t *testing.T) {
	const pages = 16
	for _, hook := range []Hook{HookBTF, HookRaw, HookPerf} {
		t.Run(string(hook), func(t *testing.T) {
			tr := loadTracer(t, Config{Hook: hook, SampleEvery: 1})
			c := startChild(t, pages)
			if err := tr.Track(c.pid); err != nil {
				t.Fatal(err)
			}
			if err := tr.RegisterBlock(c.pid, 1, c.page(0), c.page(pages)); err != nil {
				t.Fatal(err)
			}
			c.do("w 0 %d", pages)
			ips := map[uint64]int{}
			deadline := time.After(2 * time.Second)
			for n := 0; n < pages; {
				select {
				case ev := <-tr.Events():
					if ev.TGID != c.pid || ev.Kind == KindExit {
						continue
					}
					ips[ev.IP]++
					n++
				case <-deadline:
					t.Fatalf("%d events of %d faults: %v", len(ips), pages, ips)
				}
			}
			if len(ips) != 1 {
				t.Fatalf("one loop's faults at %d instructions: %v", len(ips), ips)
			}
			for ip := range ips {
				fn := childFunc(t, c.pid, ip)
				if !strings.Contains(fn, "tracer.runChild.func") {
					t.Errorf("ip %#x is in %q, not in the child's loop", ip, fn)
				}
				t.Logf("%s: ip %#x, %s", hook, ip, fn)
			}
		})
	}
}

// childFunc names the function of a child of this test at ip: the child
// runs this same binary, so ip's offset in the file it maps executable is
// translated to this process's mapping of that file and the runtime names
// the function there.
func childFunc(t *testing.T, pid uint32, ip uint64) string {
	t.Helper()
	type mapping struct {
		start, end, off uint64
		file            string // device and inode
	}
	read := func(path string) []mapping {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []mapping
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// start-end perms offset dev inode path
			fs := strings.Fields(sc.Text())
			if len(fs) < 6 || fs[1][2] != 'x' {
				continue
			}
			lo, hi, _ := strings.Cut(fs[0], "-")
			var m mapping
			m.start, _ = strconv.ParseUint(lo, 16, 64)
			m.end, _ = strconv.ParseUint(hi, 16, 64)
			m.off, _ = strconv.ParseUint(fs[2], 16, 64)
			m.file = fs[3] + " " + fs[4]
			out = append(out, m)
		}
		return out
	}
	theirs := read(fmt.Sprintf("/proc/%d/maps", pid))
	i := slices.IndexFunc(theirs, func(m mapping) bool { return m.start <= ip && ip < m.end })
	if i < 0 {
		t.Fatalf("ip %#x is in no executable mapping of pid %d", ip, pid)
	}
	at := ip - theirs[i].start + theirs[i].off // offset in the file
	for _, m := range read("/proc/self/maps") {
		if m.file == theirs[i].file && m.off <= at && at < m.off+m.end-m.start {
			if fn := runtime.FuncForPC(uintptr(m.start + at - m.off)); fn != nil {
				return fn.Name()
			}
			return "?"
		}
	}
	t.Fatalf("ip %#x: file %s offset %#x is not mapped here", ip, theirs[i].file, at)
	return ""
}

// The registers each object's C reads the instruction pointer from: x86's
// struct pt_regs (vmlinux.h) and arm64's struct user_pt_regs (declared in
// strata.bpf.c), whose UAPI layout (arch/arm64/include/uapi/asm/ptrace.h)
// is regs[31], sp, pc, pstate: pc at byte 256.
var ipRegs = []struct {
	object, goarch, regs, ip string
	uapiOffset               uint32 // 0: this kernel's BTF says, on goarch
}{
	{"strata_x86_bpfel.o", "amd64", "pt_regs", "ip", 0},
	{"strata_arm64_bpfel.o", "arm64", "user_pt_regs", "pc", 256},
}

// TestObjectsReadTheirArchsIP inspects both generated objects: each reads
// a fault's instruction pointer at its own architecture's offset. The perf
// event programs load it from their context (bpf_user_pt_regs_t, fixed by
// the UAPI), never at the other architecture's offset; the tracepoint
// programs probe-read it through a CO-RE relocation of the registers'
// struct and member.
func TestObjectsReadTheirArchsIP(t *testing.T) {
	specs := make([]*ebpf.CollectionSpec, len(ipRegs))
	index := make([]int, len(ipRegs))      // of the ip member in the struct
	offsets := make([]uint32, len(ipRegs)) // its byte offset
	for i, r := range ipRegs {
		spec, err := ebpf.LoadCollectionSpec(r.object)
		if err != nil {
			t.Fatal(err)
		}
		var regs *btf.Struct
		if err := spec.Types.TypeByName(r.regs, &regs); err != nil {
			t.Fatalf("%s: struct %s: %v", r.object, r.regs, err)
		}
		idx := slices.IndexFunc(regs.Members, func(m btf.Member) bool { return m.Name == r.ip })
		if idx < 0 {
			t.Fatalf("%s: struct %s has no %s", r.object, r.regs, r.ip)
		}
		off := regs.Members[idx].Offset.Bytes()
		want, known := r.uapiOffset, r.uapiOffset != 0
		if !known && runtime.GOARCH == r.goarch {
			want, known = kernelMemberOffset(t, r.regs, r.ip)
		}
		if known && off != want {
			t.Fatalf("%s: %s.%s at byte %d, the architecture's is %d", r.object, r.regs, r.ip, off, want)
		}
		specs[i], index[i], offsets[i] = spec, idx, off
	}
	for i, r := range ipRegs {
		spec, off := specs[i], offsets[i]
		t.Run(r.goarch, func(t *testing.T) {
			for _, name := range []string{strataProgFaultPerf, strataProgMajorFault} {
				loads := ctxLoads(spec.Programs[name].Instructions)
				if !slices.Contains(loads, off) {
					t.Errorf("%s: context loads at %v, none at %s.%s (%d)", name, loads, r.regs, r.ip, off)
				}
				for j, other := range ipRegs {
					if j != i && slices.Contains(loads, offsets[j]) {
						t.Errorf("%s: loads %s's instruction pointer (offset %d) from its context", name, other.goarch, offsets[j])
					}
				}
			}
			relo := fmt.Sprintf("Struct:%q[0:%d]", r.regs, index[i])
			for _, name := range []string{strataProgFaultBtf, strataProgFaultRaw} {
				var found bool
				for _, ins := range spec.Programs[name].Instructions {
					cr := btf.CORERelocationMetadata(&ins)
					if cr != nil && strings.Contains(cr.String(), relo) && (ins.Constant == int64(off) || ins.Offset == int16(off)) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: no CO-RE read of %s (%s.%s, byte %d)", name, relo, r.regs, r.ip, off)
				}
			}
		})
	}
}

// kernelMemberOffset returns the byte offset of member in this kernel's
// struct name, from its BTF; false when the kernel has no BTF.
func kernelMemberOffset(t *testing.T, name, member string) (uint32, bool) {
	t.Helper()
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Logf("no kernel BTF to check %s.%s against: %v", name, member, err)
		return 0, false
	}
	var s *btf.Struct
	if err := spec.TypeByName(name, &s); err != nil {
		t.Fatalf("kernel BTF: struct %s: %v", name, err)
	}
	for _, m := range s.Members {
		if m.Name == member {
			return m.Offset.Bytes(), true
		}
	}
	t.Fatalf("kernel BTF: struct %s has no %s", name, member)
	return 0, false
}

// ctxLoads returns the offsets of the 8-byte loads a program makes from its
// context: through R1 at entry and the registers and stack slots it is
// copied to, until they are overwritten (a straight walk of the
// instructions, which is enough for a context copied at the top, as clang
// does, and kept in a callee-saved register or spilled).
func ctxLoads(insns asm.Instructions) []uint32 {
	ctx := map[asm.Register]bool{asm.R1: true}
	slots := map[int16]bool{} // stack offsets holding the context
	var out []uint32
	for i, ins := range insns {
		if i > 0 && ins.Symbol() != "" {
			break // a subprogram: its R1 is an argument
		}
		op := ins.OpCode
		switch {
		case op.Class() == asm.LdXClass && op.Mode() == asm.MemMode:
			reload := ins.Src == asm.R10 && op.Size() == asm.DWord && slots[ins.Offset]
			if ctx[ins.Src] && op.Size() == asm.DWord {
				out = append(out, uint32(ins.Offset))
			}
			delete(ctx, ins.Dst)
			if reload {
				ctx[ins.Dst] = true
			}
		case (op.Class() == asm.StXClass || op.Class() == asm.StClass) && op.Mode() == asm.MemMode && ins.Dst == asm.R10:
			slots[ins.Offset] = op.Class() == asm.StXClass && op.Size() == asm.DWord && ctx[ins.Src]
		case op.Class().IsALU() && op.ALUOp() == asm.Mov && op.Source() == asm.RegSource && ctx[ins.Src]:
			ctx[ins.Dst] = true
		case ins.IsFunctionCall() || ins.IsBuiltinCall() || ins.IsKfuncCall():
			for r := asm.R0; r <= asm.R5; r++ {
				delete(ctx, r)
			}
		case op.Class().IsALU() || op.Class().IsLoad():
			delete(ctx, ins.Dst)
		}
	}
	return out
}
