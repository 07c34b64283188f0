package org.stratatrace.sparkjob;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

/**
 * A caching Spark job (local[2]) for the wall-time benchmark of the hook:
 * test/spark's BenchmarkCachingJob runs it with and without the hook,
 * alternating, and prints the median ratio.
 *
 * Each round caches an RDD of byte[] records deserialized (MEMORY_ONLY) and
 * serialized (MEMORY_ONLY_SER), reads each cached RDD three times and
 * unpersists it, then caches a DataFrame, aggregates and sorts it (Tungsten
 * pages) and unpersists it. Every block put, read and removed, every page
 * and every GC is something the hook reports.
 *
 * Prints {"job_ms":..} on stdout: the time from main's start (before the
 * SparkSession exists, so Spark's class loading, where the hook instruments
 * its classes, is inside) to the end of the last round.
 * Flags: --rounds N (default 2), --parts N (default 4), --records N
 * (per partition, default 64), --record BYTES (default 65536), --rows N
 * (DataFrame rows, default 500000).
 */
public final class StrataCacheBench {
    public static void main(String[] args) {
        long t0 = System.nanoTime();
        int rounds = 2, parts = 4, records = 64, record = 64 << 10;
        long rows = 500_000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds": rounds = Integer.parseInt(args[++i]); break;
                case "--parts": parts = Integer.parseInt(args[++i]); break;
                case "--records": records = Integer.parseInt(args[++i]); break;
                case "--record": record = Integer.parseInt(args[++i]); break;
                case "--rows": rows = Long.parseLong(args[++i]); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        SparkSession spark = SparkSession.builder().master("local[2]").appName("strata-cache-bench")
                .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "4").getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        List<Integer> seeds = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            seeds.add(i);
        }
        final int n = records, size = record;
        long sink = 0;
        for (int round = 0; round < rounds; round++) {
            for (StorageLevel level : new StorageLevel[] {StorageLevel.MEMORY_ONLY(), StorageLevel.MEMORY_ONLY_SER()}) {
                JavaRDD<byte[]> rdd = sc.parallelize(seeds, parts)
                        .mapPartitionsWithIndex((p, it) -> records(p, n, size), true).persist(level);
                sink += rdd.count();
                for (int pass = 0; pass < 3; pass++) {
                    sink += rdd.map(b -> (long) b[0] + b[b.length - 1] + b.length).reduce(Long::sum);
                }
                rdd.unpersist(true);
            }
            Dataset<Row> df = spark.range(0, rows, 1, 4)
                    .selectExpr("id", "id % 1000 as k", "concat('row-', cast(id * 7919 % 1000003 as string)) as s").cache();
            sink += df.count();
            sink += df.groupBy("k").count().count();
            sink += df.sort("s").limit(10).collectAsList().size();
            df.unpersist(true);
        }
        long t1 = System.nanoTime();
        spark.stop();
        System.out.printf("{\"job_ms\":%.1f,\"sink\":%d}%n", (t1 - t0) / 1e6, sink);
    }

    static Iterator<byte[]> records(int part, int n, int size) {
        List<byte[]> out = new ArrayList<>(n);
        for (int r = 0; r < n; r++) {
            byte[] b = new byte[size];
            b[0] = (byte) part;
            b[size - 1] = (byte) r;
            out.add(b);
        }
        return out.iterator();
    }
}
