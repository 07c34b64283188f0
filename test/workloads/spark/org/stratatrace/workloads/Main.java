package org.stratatrace.workloads;

import java.lang.management.ManagementFactory;
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
 * size multiplies every input (small 1, medium 4, large 16, xlarge 64). Each
 * workload caches at the levels its own code and its library give (cache(),
 * GraphX's and MLlib's defaults); --storage LEVEL puts every cache the
 * workload sets up at LEVEL instead. DIR holds files a workload writes (SQL's
 * Parquet copy, streaming's checkpoints).
 *
 * When it ends, the workload prints one JSON line on stdout:
 * {"workload":..,"app":..,"spark":..,"pid":..,"storage":..,"ms":..,
 * "phases":{..},"result":{..}} where storage is --storage (null without it),
 * ms is the time from just before the SparkSession is built to the
 * workload's end, and phases are
 * wall-clock instants in milliseconds since the epoch: vm_start (the JVM's
 * creation), main (main's first line), work_end (the workload returned) and
 * stopped (SparkSession.stop returned), so that a caller timing the process
 * can tell start-up, work, stop and exit apart.
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: Main WORKLOAD [--size small|medium|large|xlarge] [--parts N] [--storage LEVEL] [--work DIR]");
        }
        long mainAt = System.currentTimeMillis();
        Params p = Params.parse(args);
        Workload w = Workload.named(args[0]);
        long start = System.nanoTime();
        SparkConf conf = new SparkConf().setAppName(w.name());
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        Map<String, Object> result = w.run(spark, sc, p);
        long ms = (System.nanoTime() - start) / 1_000_000;
        long workEnd = System.currentTimeMillis();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("workload", w.name());
        out.put("app", sc.sc().applicationId());
        out.put("spark", sc.version());
        out.put("pid", ProcessHandle.current().pid());
        out.put("size", p.size);
        out.put("storage", p.storageName);
        out.put("ms", ms);
        spark.stop();
        Map<String, Object> phases = new LinkedHashMap<>();
        phases.put("vm_start", ManagementFactory.getRuntimeMXBean().getStartTime());
        phases.put("main", mainAt);
        phases.put("work_end", workEnd);
        phases.put("stopped", System.currentTimeMillis());
        out.put("phases", phases);
        out.put("result", result);
        System.out.println(Json.of(out));
    }
}
