package org.stratatrace.sparkjob;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

/**
 * The Spark job of Strata's real-Spark tests (test/spark) and demo: it caches
 * RDDs and a DataFrame, sorts enough rows for Tungsten pages, forces GCs,
 * unpersists one RDD, caches a victim RDD and then overfills storage memory
 * so Spark evicts blocks.
 * Built by make against each installed Spark (bin/sparkjob-VERSION.jar).
 *
 * Every record of the stamped RDDs is a byte[] of RECORD bytes made of
 * 32-byte stamps "STRATAr%06dp%06do%011d": the RDD id, the partition and
 * the stamp's byte offset in the partition's records (record * RECORD +
 * position). A serialized block's bytes therefore say which RDD and
 * partition they hold, and together must hold every offset of it once.
 *
 * Protocol: after each step the job prints one JSON line on stdout,
 * {"step":NAME,...}, then waits for a line on stdin (EOF: goes on at once).
 * Steps: cached, gc (--gc-steps times; each reads the deserialized RDD's
 * blocks, then collects), unpersisted, evicted, done.
 * Flags: --offheap (off-heap storage, OFF_HEAP level and off-heap Tungsten
 * pages; a second stamped RDD, "ser_heap", is then cached MEMORY_ONLY_SER on
 * the heap, so one run has both), --gc-steps N (full GCs in every executor,
 * each its own step, default 1), --parts N (partitions of each stamped RDD,
 * default 4),
 * --records N (records per partition, default 8), --record BYTES (default
 * 131072), --evict-mb N (size of the RDD that overfills storage, default 64).
 *
 * With "walk" as its first argument it runs StrataWalkJob instead (the
 * rest of the arguments are that job's), under the same protocol.
 */
public final class StrataJob {
    static final int STAMP = 32;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("walk")) {
            StrataWalkJob.main(java.util.Arrays.copyOfRange(args, 1, args.length));
            return;
        }
        boolean offheap = false;
        int parts = 4, records = 8, record = 128 << 10, evictMb = 64, gcSteps = 1;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--offheap": offheap = true; break;
                case "--gc-steps": gcSteps = Integer.parseInt(args[++i]); break;
                case "--parts": parts = Integer.parseInt(args[++i]); break;
                case "--records": records = Integer.parseInt(args[++i]); break;
                case "--record": record = Integer.parseInt(args[++i]); break;
                case "--evict-mb": evictMb = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        if (record % STAMP != 0) {
            throw new IllegalArgumentException("--record must be a multiple of " + STAMP);
        }
        SparkConf conf = new SparkConf().setAppName("strata-job" + (offheap ? "-offheap" : ""));
        SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

        StorageLevel serLevel = offheap ? StorageLevel.OFF_HEAP() : StorageLevel.MEMORY_ONLY_SER();
        JavaRDD<byte[]> ser = stamped(sc, parts, records, record);
        ser.setName("stamped-ser").persist(serLevel).count();
        JavaRDD<byte[]> deser = stamped(sc, parts, records, record);
        deser.setName("stamped-deser").persist(StorageLevel.MEMORY_ONLY()).count();
        JavaRDD<byte[]> serHeap = null;
        if (offheap) {
            serHeap = stamped(sc, parts, records, record);
            serHeap.setName("stamped-ser-heap").persist(StorageLevel.MEMORY_ONLY_SER()).count();
        }
        int serHeapId = serHeap == null ? -1 : serHeap.id();
        Dataset<Row> df = spark.range(0, 20000, 1, 2).selectExpr("id", "concat('STRATA-DF-', cast(id as string)) as v");
        df.cache().count();
        // Enough rows for the sort to spill into several Tungsten pages.
        spark.range(0, 400000, 1, 2).selectExpr("(id * 7919) % 100003 as k", "repeat('s', 64) as v")
                .sort("k").write().format("noop").mode("overwrite").save();
        step(in, "cached", sc, "\"ser\":" + ser.id() + ",\"deser\":" + deser.id() + ",\"df\":" + dfRdd(sc, ser.id(), deser.id(), serHeapId)
                + ",\"ser_heap\":" + serHeapId
                + ",\"ser_level\":\"" + (offheap ? "OFF_HEAP" : "MEMORY_ONLY_SER") + "\",\"parts\":" + parts
                + ",\"records\":" + records + ",\"record\":" + record);

        // Each gc step reads every block of the deserialized RDD (one ACCESS
        // frame each), then runs full GCs in every executor (in local mode:
        // this JVM).
        for (int g = 0; g < gcSteps; g++) {
            deser.count();
            sc.parallelize(List.of(1, 2), 2).foreach(x -> {
                System.gc();
                System.gc();
            });
            step(in, "gc", sc, "");
        }

        ser.unpersist(true);
        step(in, "unpersisted", sc, "\"rdd\":" + ser.id());

        // A victim in the same memory mode as the evicting RDD (eviction only
        // takes blocks of the mode it needs memory in), then more than fits.
        JavaRDD<byte[]> victim = stamped(sc, parts, records, record);
        victim.setName("victim").persist(serLevel).count();
        int evictParts = Math.max(1, evictMb * (1 << 20) / (records * record));
        JavaRDD<byte[]> big = stamped(sc, evictParts, records, record);
        big.setName("evictor").persist(serLevel).count();
        step(in, "evicted", sc, "\"rdd\":" + big.id() + ",\"victim\":" + victim.id());

        // The cached RDDs stay reachable to the end: the driver's
        // ContextCleaner unpersists an RDD once it is garbage collected.
        Reference.reachabilityFence(deser);
        Reference.reachabilityFence(serHeap);
        Reference.reachabilityFence(df);
        Reference.reachabilityFence(victim);
        spark.stop();
        System.out.println("{\"step\":\"done\"}");
        System.out.flush();
    }

    /** An RDD of stamped records whose stamps carry its own id. */
    static JavaRDD<byte[]> stamped(JavaSparkContext sc, int parts, int records, int record) {
        int[] id = new int[1]; // set before the job runs; serialized with the task
        List<Integer> seeds = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            seeds.add(i);
        }
        JavaRDD<byte[]> rdd = sc.parallelize(seeds, parts).mapPartitionsWithIndex(
                (p, it) -> records(id[0], p, records, record), true);
        id[0] = rdd.id();
        return rdd;
    }

    static Iterator<byte[]> records(int rdd, int part, int records, int record) {
        List<byte[]> out = new ArrayList<>(records);
        for (int r = 0; r < records; r++) {
            byte[] b = new byte[record];
            for (int o = 0; o < record; o += STAMP) {
                long off = (long) r * record + o;
                byte[] s = String.format("STRATAr%06dp%06do%011d", rdd, part, off).getBytes(StandardCharsets.US_ASCII);
                System.arraycopy(s, 0, b, o, STAMP);
            }
            out.add(b);
        }
        return out.iterator();
    }

    /** The id of the DataFrame's cached RDD: the persistent RDD that is not ours. */
    static int dfRdd(JavaSparkContext sc, int... ours) {
        int found = -1;
        for (Map.Entry<Integer, JavaRDD<?>> e : sc.getPersistentRDDs().entrySet()) {
            boolean mine = false;
            for (int o : ours) {
                mine |= e.getKey() == o;
            }
            if (!mine) {
                found = Math.max(found, e.getKey());
            }
        }
        return found;
    }

    static void step(BufferedReader in, String name, JavaSparkContext sc, String extra) throws Exception {
        String app = sc.sc().applicationId();
        String ui = sc.sc().uiWebUrl().isDefined() ? sc.sc().uiWebUrl().get() : "";
        long pid = ProcessHandle.current().pid();
        System.out.println("{\"step\":\"" + name + "\",\"app\":\"" + app + "\",\"ui\":\"" + ui + "\",\"pid\":" + pid
                + ",\"master\":\"" + sc.master() + "\"" + (extra.isEmpty() ? "" : "," + extra) + "}");
        System.out.flush();
        in.readLine(); // null at EOF: go on
    }
}
