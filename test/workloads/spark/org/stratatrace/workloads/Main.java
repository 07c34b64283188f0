package org.stratatrace.workloads;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * The eight workloads of SMTT's evaluation (the SparkBench set), written
 * against the installed Spark's MLlib, GraphX, SQL and Streaming. Built by
 * make against each installed Spark (bin/workloads/workloads-VERSION.jar);
 * run by test/workloads and `make smtt`.
 *
 * Usage: Main WORKLOAD [--size small|medium|large|xlarge] [--parts N]
 * [--storage LEVEL] [--work DIR]. Every input is generated from a fixed
 * seed, so two runs of one workload at one size do the same work. The
 * size multiplies every input (small 1, medium 4, large 16, xlarge 64). LEVEL is the
 * storage level of what the workload caches (default MEMORY_AND_DISK_SER:
 * serialized blocks are byte ranges the hook reports whole; a deserialized
 * block is reported as its array of references only). DIR holds files a
 * workload writes (SQL's Parquet copy, streaming's checkpoints).
 *
 * When it ends, the workload prints one JSON line on stdout:
 * {"workload":..,"app":..,"spark":..,"pid":..,"ms":..,"result":{..}} where
 * ms is the time from the SparkContext's start to the workload's end.
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: Main WORKLOAD [--size small|medium|large|xlarge] [--parts N] [--storage LEVEL] [--work DIR]");
        }
        Params p = Params.parse(args);
        Workload w = Workload.named(args[0]);
        long start = System.nanoTime();
        SparkConf conf = new SparkConf().setAppName(w.name());
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        Map<String, Object> result = w.run(spark, sc, p);
        long ms = (System.nanoTime() - start) / 1_000_000;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("workload", w.name());
        out.put("app", sc.sc().applicationId());
        out.put("spark", sc.version());
        out.put("pid", ProcessHandle.current().pid());
        out.put("size", p.size);
        out.put("storage", p.storageName);
        out.put("ms", ms);
        out.put("result", result);
        spark.stop();
        System.out.println(Json.of(out));
    }
}
