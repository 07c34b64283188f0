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
//     them, deserialized blocks are flagged as object graphs, Tungsten pages
//     carry their stage, partition and RDD and are freed, unpersisted and
//     evicted blocks are freed with their reason.
//   - cluster_test.go starts a standalone master and worker, the real
//     strata-agent and strata-collector, and submits the job with the hook in
//     spark.executor.extraJavaOptions; it compares Spark's REST storage API
//     with `strata trace`, checks faults and stops and restarts the agent
//     mid-job.
//   - native_test.go checks the hook's build: only the agent and JNI entry
//     points exported, the Java agent's wire constants equal to the C header's.
//
// The job (test/spark/job/StrataJob.java) prints one JSON line per step and
// waits for a line on stdin; harness_test.go drives it.
package spark
