// Package agent wires one node agent together: Run opens the resolver
// pool, the spool, the collector stream, the fault side (agent/faults over
// agent/tracer and agent/perfstat), the annotator, DAMON's heat sampler
// (agent/damon) and the hook socket (agent/hooksrv), reading the kernel's
// files under config.Config's ProcRoot and SysRoot, and registers each part's
// Prometheus collector on the --http endpoint (/metrics and /healthz, which
// refuse unauthenticated requests unless --http-insecure).
//
// Run returns when its context ends, in this order: stop taking hook
// frames, let the fault side and the heat sampler send their last, flush
// the annotator into the spool, give the streamer DrainTimeout to get it
// acknowledged (what is left stays in the spool for the next start). Without
// CAP_SYS_ADMIN the agent still runs and every present page says
// PFN_HIDDEN; with --faults auto a BPF side that cannot load leaves the
// agent running without fault attribution (strata_faults_available 0),
// with --faults on it is an error. Every batch carries the node's NodeInfo,
// read once at start. The annotator's registry is the one owner of the live
// blocks: the fault side follows and asks it, the hook server keeps only
// its admission state (agent/annotator's doc says who does what). The
// settings, their variables and the config file are package agent/config's;
// docs/agent.md describes operation and measurements.
package agent
