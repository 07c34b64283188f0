package tracer

// bpf2go compiles ../../bpf/strata.bpf.c once per target and writes
// strata_x86_bpfel.{go,o} (amd64) and strata_arm64_bpfel.{go,o} (arm64)
// beside this file, each Go file built only for its GOARCH. Flags, one by
// one:
//
//	-cc clang-14           the pinned compiler (Debian 12's clang 14.0.6); the
//	                       committed object is reproducible only with it
//	-target amd64,arm64    one object per architecture the images ship,
//	                       compiled with __TARGET_ARCH_x86 / _arm64, which
//	                       select the registers bpf_tracing.h reads (x86's
//	                       pt_regs, arm64's user_pt_regs: a uprobe's
//	                       arguments, a fault's pc); page_fault_user, whose
//	                       x86 error code the classifier decodes, is x86-only
//	                       (on arm64 the loader falls back to the perf event)
//	-go-package tracer     the package of the generated Go file
//	-type ...              Go mirrors of the structs in bpf/strata.h, so no
//	                       layout is written twice by hand
//	-I../../bpf/include    vmlinux.h (bpftool, from this kernel's BTF) and the
//	                       vendored libbpf 1.1.2 headers
//	-I../../bpf            strata.h
//	-mcpu=v3               overrides bpf2go's v1: atomic fetch-and (exit
//	                       cleanup) and 32-bit jumps need v3 (kernel >= 5.12)
//	-Wall -Werror          warnings fail the build
//
// bpf2go strips DWARF with the llvm-strip matching -cc and maps the source
// directory to a relative path, so regenerating gives byte-identical output.
//go:generate go tool bpf2go -cc clang-14 -target amd64,arm64 -go-package tracer -type event -type cell_key -type range_set -type run_ref -type block_range -type block_counters -type tgid_counters -type fault_stats -type fill_key -type fill_done -type fill_counts strata ../../bpf/strata.bpf.c -- -I../../bpf/include -I../../bpf -mcpu=v3 -Wall -Werror
