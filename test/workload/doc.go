// Package workload builds and runs the end-to-end workload regions.c: a C
// process that maps three anonymous regions with known contents and reports
// them over the hook socket as three blocks of one RDD, using the hook's own
// header (jvmhook/include/strata_hook.h) and encoder (jvmhook/native/frame.c).
// regions.c's leading comment is its manual: the regions, the byte pattern
// (each touched page starts with its own virtual address), the flags and the
// JSON lines it prints.
//
// Tests use it as:
//
//	bin := workload.Build(t) // gcc, skips with the reason when gcc is missing
//	p := workload.Start(t, bin, workload.Options{Socket: sock, AppID: "app-1", ExecutorID: "1"})
//	for _, r := range p.Regions { ... r.Vaddr, r.Length, r.TouchedPages ... }
//	done, err := p.Stop() // closes stdin: the workload FREEs its blocks and exits
//
// Compile builds any C program against the hook header and encoder with the
// flags the JNI library will use, so other tests (agent/hooksrv's golden
// frames) build C the same way.
package workload
