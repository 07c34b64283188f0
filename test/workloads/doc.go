// Package workloads runs SMTT's eight Spark workloads (the SparkBench set
// its evaluation used: LogisticRegression, SVM, ALS, PageRank, SVDPlusPlus,
// TriangleCount, RDDRelation, PageViewStream; Java sources in spark/, built
// by make into bin/workloads/workloads-VERSION.jar) on a real Spark, with
// and without Strata's tracing, and starts what surrounds them: a real
// strata-collector and strata-agent (Node), a real Spark History Server from
// the installed distribution (HistoryServer), and the comparisons of what
// the collector's fetchers read from a live history server against the same
// applications' event logs and against the REST responses the fetcher tests
// have recorded (Compare*).
//
// `make smtt` drives it (test/workloads/smtt); workloads_test.go keeps a
// small smoke of the report path and the history-server check in make test.
//
// What callers must know:
//
//   - Every process it starts runs in its own process group and is ended,
//     group and all, by Stop; callers defer it. A test or the smtt main that
//     is killed leaves them running, as any harness would.
//   - Workloads run in local mode (local[2]): the driver is the executor,
//     so the hook goes into spark.driver.extraJavaOptions. A traced run and
//     an untraced run differ in those options and in the node: RunPairs
//     brings the agent and collector down before an untraced run and up
//     before a traced one, outside both runs' times.
//   - Each workload caches at its own levels unless RunConfig.Storage
//     names one.
//   - The wall time of a run is the spark-submit process's, from start to
//     exit; Result.Phases splits it at the instants the workload printed
//     (launch, boot, work, stop, exit), and Result.SparkMs is the
//     workload's own time.
package workloads
