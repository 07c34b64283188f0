package org.stratatrace.sparkjob;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.Serializable;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32;

import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.columnar.DefaultCachedBatch;
import org.apache.spark.storage.RDDBlockId;
import org.apache.spark.storage.StorageLevel;

import scala.Option;
import scala.Tuple2;

/**
 * The Spark job of the hook's walker tests (test/spark/walk_test.go), run
 * in local mode: it caches every kind of deserialized block the hook
 * resolves, with a marker of the RDD (or DataFrame) and the partition in
 * every record, so a test reading the executor's memory at the reported
 * ranges can tell whose bytes they are.
 *
 * <pre>
 *   bytes     RDD[byte[]] MEMORY_ONLY: StrataJob's stamped records
 *   objects   RDD[Tuple2[String, Rec]] MEMORY_ONLY: a key string and a Rec
 *             (marker string, marker long, an int, a double)
 *   filtered  objects.filter(keep all) MEMORY_ONLY: the same record objects
 *   disk      RDD[Rec] MEMORY_AND_DISK (deserialized)
 *   big       RDD[Rec], one partition of --big records (a walk to cut)
 *   df_ints, df_strings, df_mixed   DataFrames cached (df.cache())
 *   beans     a Dataset of Java beans (Encoders.bean) cached
 *   df_many   a DataFrame cached in batches of --many-batch rows
 *             (spark.sql.inMemoryColumnarStorage.batchSize, and
 *             spark.sql.execution.arrow.maxRecordsPerBatch for Arrow
 *             batches): hundreds of batches a partition
 * </pre>
 *
 * Markers: an object record's strings start "STRATA-OBJ-r%06d-p%06d-" and
 * its long is OBJ_LONG | rdd << 20 | partition; a DataFrame row's values are
 * its table's markers (tag: ints 1, strings 2, mixed 3, beans 4, many 5): the int
 * DF_INT + tag * 256 + partition, the long DF_LONG + tag * 256 + partition,
 * the double of the int, strings starting "STRATA-DF-t<tag>-p<partition>-".
 *
 * Protocol as StrataJob's (which runs this job when its first argument is
 * "walk"): one JSON line per step, then a line on stdin; the step's details
 * go to the file OUT/STEP.json (--out OUT) as one JSON object. Steps: cached
 * ("rdds": name to RDD id, "columns": DataFrame name to its columns,
 * "buffers": block name to its cached batches' buffers as the block
 * manager holds them, per column (Arrow batches: one column) the length and
 * the CRC-32 of each batch's buffer in batch order, and the flags'
 * values), gc
 * (--gc-steps times: full GCs), young (an RDD of object records cached,
 * "rdds": {"fresh": id}, then garbage made until eight young collections
 * ran: "young_gcs", how many), unpersisted ("rdds": the RDDs
 * unpersisted: disk and df_ints), done.
 * Flags: --out DIR (required), --parts N (default 2), --records N (object
 * records per partition, default 300), --record BYTES (stamped record
 * size, default 16384), --big N (default 3000), --rows N (DataFrame rows
 * per partition, default 8000), --many-rows N (df_many's rows per
 * partition, default 26000), --many-batch N (its rows per batch, default
 * 100), --gc-steps N (default 1).
 */
public final class StrataWalkJob {
    static final long OBJ_LONG = 0x4F424A0000000000L;
    static final int DF_INT = 0x53440000;
    static final long DF_LONG = 0x5354524144460000L;
    /**
     * Characters of an object record's strings: records of some hundred
     * bytes, as cached rows of text are, rather than of tens, so that the
     * garbage Spark's size sampling leaves between the records while it
     * unrolls a partition stays small beside them.
     */
    static final int STRING = 256;

    /** An object record: primitives and a string, all marked. */
    public static final class Rec implements Serializable {
        private static final long serialVersionUID = 1L;
        final String marker;
        final long markerLong;
        final int index;
        final double value;

        Rec(String marker, long markerLong, int index) {
            this.marker = marker;
            this.markerLong = markerLong;
            this.index = index;
            this.value = index * 0.5;
        }
    }

    /** A Java bean for Encoders.bean. */
    public static final class Bean implements Serializable {
        private static final long serialVersionUID = 1L;
        private int marker;
        private long markerLong;
        private String name;
        private double value;

        public Bean() {}

        public int getMarker() { return marker; }
        public void setMarker(int v) { marker = v; }
        public long getMarkerLong() { return markerLong; }
        public void setMarkerLong(long v) { markerLong = v; }
        public String getName() { return name; }
        public void setName(String v) { name = v; }
        public double getValue() { return value; }
        public void setValue(double v) { value = v; }
    }

    public static void main(String[] args) throws Exception {
        int parts = 2, records = 300, record = 16 << 10, big = 3000, rows = 8000, gcSteps = 1;
        int manyRows = 26000, manyBatch = 100;
        String outDir = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out": outDir = args[++i]; break;
                case "--parts": parts = Integer.parseInt(args[++i]); break;
                case "--records": records = Integer.parseInt(args[++i]); break;
                case "--record": record = Integer.parseInt(args[++i]); break;
                case "--big": big = Integer.parseInt(args[++i]); break;
                case "--rows": rows = Integer.parseInt(args[++i]); break;
                case "--gc-steps": gcSteps = Integer.parseInt(args[++i]); break;
                case "--many-rows": manyRows = Integer.parseInt(args[++i]); break;
                case "--many-batch": manyBatch = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        if (outDir == null) {
            throw new IllegalArgumentException("--out is required");
        }
        SparkSession spark = SparkSession.builder().appName("strata-walk-job").getOrCreate();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Integer> rdds = new LinkedHashMap<>();
        Map<String, String[]> columns = new LinkedHashMap<>();
        final int n = records;

        JavaRDD<byte[]> bytes = StrataJob.stamped(sc, parts, 8, record);
        bytes.setName("bytes").persist(StorageLevel.MEMORY_ONLY()).count();
        rdds.put("bytes", bytes.id());

        JavaRDD<Tuple2<String, Rec>> objects = marked(sc, parts, (rdd, p, it) -> {
            List<Tuple2<String, Rec>> out = new ArrayList<>(n);
            Strings s = new Strings(rdd, p);
            for (int r = 0; r < n; r++) {
                out.add(new Tuple2<>(s.next(r, 'k'), new Rec(s.next(r, 'v'), objLong(rdd, p), r)));
            }
            return out.iterator();
        });
        objects.setName("objects").persist(StorageLevel.MEMORY_ONLY()).count();
        rdds.put("objects", objects.id());

        JavaRDD<Tuple2<String, Rec>> filtered = objects.filter(t -> true);
        filtered.setName("filtered").persist(StorageLevel.MEMORY_ONLY()).count();
        rdds.put("filtered", filtered.id());

        JavaRDD<Rec> disk = recs(sc, parts, n);
        disk.setName("disk").persist(StorageLevel.MEMORY_AND_DISK()).count();
        rdds.put("disk", disk.id());

        JavaRDD<Rec> bigRdd = recs(sc, 1, big);
        bigRdd.setName("big").persist(StorageLevel.MEMORY_ONLY()).count();
        rdds.put("big", bigRdd.id());

        String pid = "spark_partition_id()";
        Dataset<Row> ints = cacheTable(spark, sc, rdds, columns, "df_ints", parts, rows,
                intMarker(1, pid) + " as m", intMarker(1, pid) + " as n");
        Dataset<Row> strs = cacheTable(spark, sc, rdds, columns, "df_strings", parts, rows,
                "concat('STRATA-DF-t2-p', " + pid + ", '-', id) as s",
                "concat('STRATA-DF-t2-p', " + pid + ", '-', repeat('x', 120)) as t");
        Dataset<Row> mixed = cacheTable(spark, sc, rdds, columns, "df_mixed", parts, rows,
                intMarker(3, pid) + " as i", "cast(" + DF_LONG + " + 768 + " + pid + " as bigint) as l",
                "cast(" + intMarker(3, pid) + " as double) as d", "concat('STRATA-DF-t3-p', " + pid + ", '-', id) as s");
        final int perPart = rows;
        JavaRDD<Bean> beanRdd = sc.parallelize(seeds(parts), parts).mapPartitionsWithIndex((p, it) -> {
            List<Bean> out = new ArrayList<>(perPart);
            for (int r = 0; r < perPart; r++) {
                Bean b = new Bean();
                b.setMarker(DF_INT + 4 * 256 + p);
                b.setMarkerLong(DF_LONG + 4 * 256 + p);
                b.setName("STRATA-DF-t4-p" + p + "-" + r);
                b.setValue(DF_INT + 4 * 256 + p);
                out.add(b);
            }
            return out.iterator();
        }, true);
        Dataset<Bean> beans = spark.createDataset(beanRdd.rdd(), Encoders.bean(Bean.class));
        cache(sc, rdds, "beans", beans);
        columns.put("beans", beans.columns());

        // Rows per batch: the default serializer's, and Spark 4's Arrow one's.
        String[] batchSizes = {"spark.sql.inMemoryColumnarStorage.batchSize", "spark.sql.execution.arrow.maxRecordsPerBatch"};
        String[] defaults = new String[batchSizes.length];
        for (int i = 0; i < batchSizes.length; i++) {
            defaults[i] = spark.conf().get(batchSizes[i]);
            spark.conf().set(batchSizes[i], Integer.toString(manyBatch));
        }
        Dataset<Row> many = cacheTable(spark, sc, rdds, columns, "df_many", parts, manyRows,
                intMarker(5, pid) + " as m", "cast(" + DF_LONG + " + 1280 + " + pid + " as bigint) as l");
        for (int i = 0; i < batchSizes.length; i++) {
            spark.conf().set(batchSizes[i], defaults[i]);
        }

        StringBuilder buffers = new StringBuilder();
        for (String t : new String[] {"df_ints", "df_strings", "df_mixed", "beans", "df_many"}) {
            for (int p = 0; p < parts; p++) {
                RDDBlockId id = new RDDBlockId(rdds.get(t), p);
                buffers.append(buffers.length() == 0 ? "" : ",").append('"').append(id.name()).append("\":")
                        .append(buffers(id));
            }
        }
        step(in, outDir, "cached", sc, "\"rdds\":" + json(rdds) + ",\"columns\":" + jsonColumns(columns) + ",\"buffers\":{"
                + buffers + "},\"parts\":" + parts + ",\"records\":" + records + ",\"record\":" + record
                + ",\"big\":" + big + ",\"rows\":" + rows + ",\"many_batch\":" + manyBatch);

        for (int g = 0; g < gcSteps; g++) {
            sc.parallelize(List.of(1, 2), 2).foreach(x -> {
                System.gc();
                System.gc();
            });
            step(in, outDir, "gc", sc, "");
        }

        // A block young collections keep moving: cached just before them.
        JavaRDD<Rec> fresh = recs(sc, parts, n);
        fresh.setName("fresh").persist(StorageLevel.MEMORY_ONLY()).count();
        Map<String, Integer> young = new LinkedHashMap<>();
        young.put("fresh", fresh.id());
        step(in, outDir, "young", sc, "\"young_gcs\":" + youngCollections(8) + ",\"rdds\":" + json(young));

        disk.unpersist(true);
        ints.unpersist(true);
        Map<String, Integer> gone = new LinkedHashMap<>();
        gone.put("disk", rdds.get("disk"));
        gone.put("df_ints", rdds.get("df_ints"));
        step(in, outDir, "unpersisted", sc, "\"rdds\":" + json(gone));

        Reference.reachabilityFence(bytes);
        Reference.reachabilityFence(objects);
        Reference.reachabilityFence(filtered);
        Reference.reachabilityFence(bigRdd);
        Reference.reachabilityFence(strs);
        Reference.reachabilityFence(mixed);
        Reference.reachabilityFence(beans);
        Reference.reachabilityFence(many);
        Reference.reachabilityFence(fresh);
        spark.stop();
        System.out.println("{\"step\":\"done\"}");
        System.out.flush();
    }

    /** Short-lived garbage until n young collections ran; returns how many did. */
    static long youngCollections(int n) {
        long before = youngCount();
        byte[][] keep = new byte[32][];
        for (long i = 0; youngCount() < before + n; i++) {
            keep[(int) (i % keep.length)] = new byte[64 << 10];
        }
        Reference.reachabilityFence(keep);
        return youngCount() - before;
    }

    /** Collections of the young generation so far (G1 Young Generation, PS Scavenge, Copy). */
    static long youngCount() {
        long n = 0;
        for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
            String name = b.getName();
            if (name.contains("Young") || name.equals("PS Scavenge") || name.equals("Copy")) {
                n += b.getCollectionCount();
            }
        }
        return n;
    }

    static long objLong(int rdd, int p) {
        return OBJ_LONG | (long) rdd << 20 | p;
    }

    static String intMarker(int tag, String pid) {
        return "cast(" + (DF_INT + tag * 256) + " + " + pid + " as int)";
    }

    /**
     * A record's strings: "STRATA-OBJ-r%06d-p%06d-" then a letter and the record, padded with
     * the same marker again to STRING chars, so that any 54 bytes of a string hold a whole one.
     */
    static final class Strings {
        private final byte[] template;

        Strings(int rdd, int p) {
            String marker = String.format("STRATA-OBJ-r%06d-p%06d-", rdd, p);
            template = (marker + "k00000000-" + marker.repeat(STRING / marker.length() + 1))
                    .substring(0, STRING).getBytes(StandardCharsets.US_ASCII);
        }

        /** One string of record r (allocates the String and its bytes only). */
        String next(int r, char letter) {
            template[27] = (byte) letter;
            for (int i = 35, v = r; i >= 28; i--, v /= 10) {
                template[i] = (byte) ('0' + v % 10);
            }
            return new String(template, 0, template.length, StandardCharsets.ISO_8859_1);
        }
    }

    interface PartitionFn<T> extends Serializable {
        Iterator<T> apply(int rdd, int partition, Iterator<Integer> seeds);
    }

    /** An RDD of parts partitions whose records know their RDD's id and partition. */
    static <T> JavaRDD<T> marked(JavaSparkContext sc, int parts, PartitionFn<T> fn) {
        int[] id = new int[1]; // set before the job runs; serialized with the task
        JavaRDD<T> rdd = sc.parallelize(seeds(parts), parts).mapPartitionsWithIndex(
                (p, it) -> fn.apply(id[0], p, it), true);
        id[0] = rdd.id();
        return rdd;
    }

    static JavaRDD<Rec> recs(JavaSparkContext sc, int parts, int n) {
        return marked(sc, parts, (rdd, p, it) -> {
            List<Rec> out = new ArrayList<>(n);
            Strings s = new Strings(rdd, p);
            for (int r = 0; r < n; r++) {
                out.add(new Rec(s.next(r, 'v'), objLong(rdd, p), r));
            }
            return out.iterator();
        });
    }

    static List<Integer> seeds(int parts) {
        List<Integer> seeds = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            seeds.add(i);
        }
        return seeds;
    }

    /** A DataFrame of parts * rows rows with the given columns, cached; its RDD id goes in rdds. */
    static Dataset<Row> cacheTable(SparkSession spark, JavaSparkContext sc, Map<String, Integer> rdds,
            Map<String, String[]> columns, String name, int parts, int rows, String... exprs) {
        Dataset<Row> df = spark.range(0, (long) parts * rows, 1, parts).selectExpr(exprs);
        cache(sc, rdds, name, df);
        columns.put(name, df.columns());
        return df;
    }

    /** Caches ds and records the id of the RDD its cache made (the persistent RDD that is new). */
    static void cache(JavaSparkContext sc, Map<String, Integer> rdds, String name, Dataset<?> ds) {
        Set<Integer> before = new HashSet<>(sc.getPersistentRDDs().keySet());
        ds.cache().count();
        int found = -1;
        for (Integer id : sc.getPersistentRDDs().keySet()) {
            if (!before.contains(id)) {
                found = Math.max(found, id);
            }
        }
        rdds.put(name, found);
    }

    /**
     * The buffers of the cached batches of a block as the block manager
     * holds them, as JSON: per column (Arrow batches: their one buffer of
     * every column), [length, CRC-32] of each batch's buffer, in batch order.
     */
    static String buffers(RDDBlockId id) {
        // Option<Iterator<?>> in Spark 3.5, Option<Iterator<Object>> in 4.
        Option<?> values = SparkEnv.get().blockManager().memoryStore().getValues(id);
        if (values.isEmpty()) {
            return "null";
        }
        List<List<byte[]>> cols = new ArrayList<>();
        scala.collection.Iterator<?> it = (scala.collection.Iterator<?>) values.get();
        while (it.hasNext()) {
            Object batch = it.next();
            byte[][] bufs;
            if (batch instanceof DefaultCachedBatch) {
                bufs = ((DefaultCachedBatch) batch).buffers();
            } else { // Spark 4's ArrowCachedBatch (spark.sql.cache.serializer), not in 3.5
                try {
                    bufs = new byte[][] {(byte[]) batch.getClass().getMethod("arrowData").invoke(batch)};
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException("batch " + batch.getClass(), e);
                }
            }
            for (int c = 0; c < bufs.length; c++) {
                if (cols.size() <= c) {
                    cols.add(new ArrayList<>());
                }
                cols.get(c).add(bufs[c]);
            }
        }
        StringBuilder b = new StringBuilder("[");
        for (int c = 0; c < cols.size(); c++) {
            b.append(c > 0 ? ",[" : "[");
            List<byte[]> col = cols.get(c);
            for (int i = 0; i < col.size(); i++) {
                CRC32 crc = new CRC32();
                crc.update(col.get(i));
                b.append(i > 0 ? ",[" : "[").append(col.get(i).length).append(',').append(crc.getValue()).append(']');
            }
            b.append(']');
        }
        return b.append(']').toString();
    }

    static String json(Map<String, Integer> m) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Integer> e : m.entrySet()) {
            b.append(b.length() > 1 ? "," : "").append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        return b.append('}').toString();
    }

    static String jsonColumns(Map<String, String[]> m) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, String[]> e : m.entrySet()) {
            b.append(b.length() > 1 ? "," : "").append('"').append(e.getKey()).append("\":[");
            String[] c = e.getValue();
            for (int i = 0; i < c.length; i++) {
                b.append(i > 0 ? "," : "").append('"').append(c[i]).append('"');
            }
            b.append(']');
        }
        return b.append('}').toString();
    }

    /** Writes the step's details to OUT/NAME.json, then takes StrataJob's step. */
    static void step(BufferedReader in, String out, String name, JavaSparkContext sc, String extra) throws Exception {
        Files.writeString(Path.of(out, name + ".json"), "{" + extra + "}");
        StrataJob.step(in, name, sc, "");
    }
}
