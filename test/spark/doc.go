// Package spark holds Strata's end-to-end tests on real Apache Spark: the
// Spark 3.5 and 4 distributions `make deps` installs, the JVM hook `make
// build` puts in bin/jvmhook, and the test job test/spark/job (built per
// Spark version into bin/sparkjob). Every test skips with the reason when
// one of those, java or root is missing.
//
//   - local_test.go runs the job in local[2] under the hook, with the
//     agent's own hook server (agent/hooksrv) in the test process, and checks
//     what the hook reports byte for byte: every block Spark's live REST API
//     lists is registered with its RDD and partition, serialized blocks'
//     ranges add up to Spark's memory size exactly and hold the block's
//     stamped bytes (read through /proc/PID/mem) before and after GCs moved
//     them, deserialized blocks are flagged as object graphs and a cached
//     DataFrame is registered as its columns with their buffers, Tungsten pages
//     carry their stage, partition and RDD and are freed, unpersisted and
//     evicted blocks are freed with their reason.
//     Before the job ends the hook server stops: the job finishes, and the
//     hook counts none of its last frames (FREEs) as dropped.
//   - cluster_test.go starts a standalone master and worker, the real
//     strata-agent and strata-collector (node_test.go), and submits the job
//     with the hook in spark.executor.extraJavaOptions; it checks what a user
//     sees against Spark's REST API and the executor's memory: every block in
//     `strata trace` and `strata records` with its RDD and partition,
//     serialized blocks' ranges adding up to memoryUsed exactly, the
//     deserialized RDD walked (0.8-1.6 of memoryUsed, 90 % of its pages
//     holding its stamps, walked again after the GCs and re-sent to a
//     restarted agent) and `strata report`'s resolved share, the bytes at
//     every recorded range (before and after GCs moved them), Tungsten pages
//     freed, faults in `strata faults`, unpersisted and evicted blocks freed
//     with their reason and gone from the agent's registry and the kernel's
//     maps (/metrics); it stops the agent during a gc step that reads the
//     deserialized RDD and restarts it, after which every live block is
//     registered again at its current address and the agent hears of the
//     dropped reads. `strata hook-opts --ship` refuses the cluster's master:
//     a standalone executor fetches spark.files only once its JVM runs.
//   - walk_test.go runs StrataWalkJob (test/spark/job/StrataWalkJob.java,
//     `StrataJob walk`) in local[2] under the hook: every deserialized block
//     it caches is resolved to its bytes. Object graphs (byte[] records,
//     records of objects and strings, MEMORY_AND_DISK) are walked, their
//     pages 0.8-1.6 of Spark's memoryUsed and 90 % of them holding the
//     partition's markers; cached DataFrames and a Dataset of beans are
//     registered per column with the column's name, each column's walk
//     holding exactly the buffers the job read from the block manager
//     (every buffer's length and CRC-32 read back at its extent), one
//     DataFrame in hundreds of batches a partition (walks of several WALK
//     frames); before and after full GCs (walks made again, never used
//     stale; columns' walks sent again where buffers moved), through young
//     GCs (walks hold), across an agent restart (every walk re-sent), with
//     shared records counted once,
//     a walk cut at walk-objects, unpersisted blocks freed with no walk
//     after. Spark 3.5 with G1, Spark 4 with ParallelGC and Arrow batches;
//     under ZGC the hook says walking is unsupported.
//   - bench_test.go: BenchmarkHook (the cost of one instrumented call, with
//     and without something to report), BenchmarkCachingJob (a caching
//     job's wall time with and without the hook, median of alternating
//     pairs) and BenchmarkWalk (the walker's CPU per object and per GiB,
//     first and after a full GC, and the job's CPU against walk=off).
//   - coldcache_test.go: two RDDs of the same size, one read twenty times
//     and one never after caching; the Cold Cache heuristic flags the second
//     and not the first.
//   - runtimes_test.go runs the job in local[2] on the Java runtimes besides
//     the default 17 (make deps installs them): Spark 3.5 on Java 11, Spark 4
//     on Java 21, and checks in one compact run each what local_test.go and
//     walk_test.go check in their essentials (every block registered, the
//     bytes at the reported ranges, the walks' share of Spark's size, the
//     cached DataFrame's columns); startup_test.go starts the hook in each.
//   - off_test.go: JVMs whose hook stays off (a missing jar, a bad option,
//     no jar=) tell the agent's hook server, which counts them by reason and
//     logs their pid and the words of their stderr; the library's Java
//     check refuses Java 7 to 10 (Java 8's path: no Java 8 runs here) and
//     reports them the same way.
//   - native_test.go checks the hook's build: only the agent and JNI entry
//     points exported, the Java agent's wire constants equal to the C header's.
//
// The job (test/spark/job/StrataJob.java) prints one JSON line per step and
// waits for a line on stdin; harness_test.go drives it.
package spark
