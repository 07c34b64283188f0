// Package gen writes synthetic job histories for tests, benchmarks and the
// demo: MapReduce job histories (Avro-JSON .jhist plus the job's
// _conf.xml, in Hadoop's done layout) and Spark event logs, with a chosen
// number of tasks and chosen skew, GC and memory characteristics. Output is
// deterministic for a given spec (Seed).
//
// It also has writers for the two compressed stream formats Spark uses for
// event logs that Go's ecosystem lacks: lz4-java's block stream
// (LZ4BlockOutputStream) and snappy-java's stream (SnappyOutputStream), so
// tests can produce .lz4 and .snappy logs without a JVM.
package gen
