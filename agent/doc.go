// Package agent wires one node agent together and does nothing else: every
// step of a block address's walk lives in its own package.
//
//	hooksrv    the hook socket: SO_PEERCRED, frames, one session per JVM
//	annotator  hook events + resolved pages + kernel counters -> records
//	resolver   a Pool of page resolvers, one per CPU (pagemap, kpageflags, NUMA)
//	faults     the kernel side: the BPF fault tracer (tracer) mirrors the
//	           annotator's blocks and yields sampled faults and per-block
//	           counters; perfstat counts each traced process
//	spool      the durable log of batches not yet acknowledged
//	streamer   the gRPC stream to the collector, replaying from the spool
//	procmem    the one reader of /proc and /sys, rooted at --proc and --sys
//
// Run is what cmd/strata-agent calls; it returns when its context ends,
// after the shutdown order described in Run: stop taking hook frames, let
// the fault side send its last counters, flush the annotator into the
// spool, and give the streamer Config.DrainTimeout to get it acknowledged.
//
// What the operator must know:
//   - The agent needs CAP_SYS_ADMIN to see PFNs (pagemap zeroes them
//     otherwise) and to read /proc/kpageflags; without it, it still runs and
//     every present page says PFN_HIDDEN, with one warning in the log.
//   - Fault attribution (--faults auto, the default) loads BPF programs when
//     it can (root, BPF, BTF) and otherwise runs without them, saying why
//     in the log and in strata_faults_available; --faults on makes a failed
//     load fatal, --faults off never tries.
//   - --proc and --sys must be the host's procfs and sysfs (hostPID): hook
//     peers are host pids. Every file the agent reads is read under them,
//     so a fixture tree works as well as the real ones.
//   - Every batch carries the node's description (NodeInfo: NUMA nodes with
//     memory, base page size, MemTotal), read once at start.
//   - The hook socket is open to every local user; the bounds that keep one
//     peer from denying service to the others (sessions per pid, uid and
//     node; idle sessions; range length; live blocks per session, uid and
//     node; resolver slices taken in turn) are Config fields, flags and
//     STRATA_* variables, listed with what happens at each in the README's
//     Reliability section. Keep --hook-max-sessions well below
//     RLIMIT_NOFILE: the spool and the collector stream need descriptors
//     too (Run warns when they are close).
//   - Towards the collector the agent presents --tls-cert/--tls-key (role
//     agent) and verifies it with --tls-ca; its --http endpoint (/metrics
//     through client_golang, metrics.go; /healthz) refuses unauthenticated
//     requests: --http-token-file and/or --http-client-ca, or
//     --http-insecure. Probe is the container's health check, with the
//     agent's own token or certificate. --hook-socket-mode and
//     --hook-socket-group narrow who may connect to the hook socket.
//   - --install-hook DIR copies the JVM hook's files from --hook-files (the
//     image's /usr/share/strata/jvmhook) into DIR at start, for executors
//     to load from a host path; --pyroscope-server sends continuous
//     profiles (package profiling).
//   - The log is rate limited per message (agent/ratelog: --log-burst lines
//     per --log-interval, the rest counted in strata_log_suppressed_total),
//     so a flood of one warning cannot fill the disk.
package agent
