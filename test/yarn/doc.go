// Package yarn holds Strata's end-to-end tests on a real YARN cluster: the
// one test/yarncluster builds (HDFS, a ResourceManager, two NodeManagers
// whose containers are processes of their own, and the MapReduce
// JobHistoryServer, Hadoop 3.3.6's mini clusters in one JVM), started once
// by TestMain and shared by every test of the package.
//
//   - spark_test.go submits StrataJob (test/spark/job) with spark-submit
//     --master yarn, two executors in two NodeManager containers under the
//     JVM hook, with the real strata-agent and
//     strata-collector: every block of every cached RDD Spark's REST API
//     lists is in `strata trace` and `strata records` with the executor id
//     Spark gives it, the agent's node and the pid of the container whose
//     executor that is; the bytes at every recorded range of the serialized
//     RDD, read through that container's /proc/PID/mem, are the block's
//     records. It does so with the hook files installed on the node (an
//     absolute -agentpath in spark.executor.extraJavaOptions) and with the
//     files shipped by the job through YARN's distributed cache
//     (spark.yarn.dist.files, what --files sets) and named relative to the
//     container's working directory (./libstratahook.so in
//     spark.executor.defaultJavaOptions), as `strata hook-opts --ship`
//     prints them; the executors then map the library from the
//     NodeManagers' cache, not from where it was built. Both in client
//     mode; the installed files also in cluster mode, the driver in the
//     application master's container (read from its stdout; the driver
//     then waits for good and the test kills the application); and on
//     Spark 4 (its Hadoop 3.5 client) in client mode.
//   - history_test.go serves the client-mode runs' event logs with a
//     real Spark History Server; the collector's history poller reads
//     each application through it as a job named by its YARN application
//     id, every heuristic's result equals the one from the event log
//     file, and Spark Configuration and the job metrics hold the executor
//     count, memory, cores and overhead the runs had.
//   - mapreduce_test.go runs the examples jar's wordcount on HDFS input,
//     once balanced, once with one mapper given a thousand times the input
//     of the ten others, and once balanced with its history written in
//     Avro binary, and a sort (teragen, then terasort); the collector's
//     history poller reads every job from the JobHistoryServer's done
//     directory (.jhist and _conf.xml, copied out of HDFS through WebHDFS)
//     and from its REST API; Mapper Skew is at the severity the input's
//     sizes imply, and every heuristic's result from the live server
//     equals the one from the files.
//   - overhead_test.go, only with STRATA_YARN_OVERHEAD=N, times N pairs of
//     client-mode runs with no Strata on the node and traced.
//
// STRATA_YARN_KEEP_HISTORIES=DIR copies the MapReduce jobs' histories and
// confs into DIR (collector/fetcher/testdata/binary holds the binary one).
//
// The tests run under make test-yarn (STRATA_YARN=1; make test leaves them
// out: the cluster alone takes a CPU-minute to start). They skip, with the
// reason, when the cluster, java, Spark 3.5 (Spark 4 for its run) or, for
// the agent, root is missing. The cluster's directory is removed when every test passed and
// kept, with its path printed, when one failed.
package yarn
