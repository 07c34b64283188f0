package org.stratatrace.sparkjob;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

/**
 * The job of test/spark's BenchmarkWalk (local[2]): it caches one RDD of
 * StrataWalkJob's Rec records deserialized (--parts partitions of --records
 * records: three objects each), then forces full GCs in the executor, so the
 * benchmark can read the walker's CPU time for the first walks and for the
 * walks after a full GC. Steps are told through files in --out DIR, which
 * the benchmark watches: the job writes STEP.json ({"rdd":..,"pid":..}) and
 * waits for go-STEP to exist. Steps: cached, gc; then it exits.
 */
public final class StrataWalkBench {
    public static void main(String[] args) throws Exception {
        int parts = 2, records = 400_000;
        String out = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out": out = args[++i]; break;
                case "--parts": parts = Integer.parseInt(args[++i]); break;
                case "--records": records = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        if (out == null) {
            throw new IllegalArgumentException("--out is required");
        }
        SparkSession spark = SparkSession.builder().appName("strata-walk-bench").getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        JavaRDD<StrataWalkJob.Rec> rdd = StrataWalkJob.recs(sc, parts, records);
        rdd.setName("walked").persist(StorageLevel.MEMORY_ONLY()).count();
        step(out, "cached", rdd.id());
        sc.parallelize(List.of(1, 2), 2).foreach(x -> {
            System.gc();
            System.gc();
        });
        step(out, "gc", rdd.id());
        spark.stop();
    }

    static void step(String out, String name, int rdd) throws Exception {
        Files.writeString(Path.of(out, name + ".json"),
                "{\"rdd\":" + rdd + ",\"pid\":" + ProcessHandle.current().pid() + "}");
        Path go = Path.of(out, "go-" + name);
        while (!Files.exists(go)) {
            Thread.sleep(50);
        }
    }
}
