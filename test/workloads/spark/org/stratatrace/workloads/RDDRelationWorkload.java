package org.stratatrace.workloads;

import java.io.File;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;

/**
 * RDDRelation, the SQL workload: an RDD of (key, value) records as a
 * table, cached (Spark's in-memory columnar cache: cacheTable at Spark SQL's
 * default level, MEMORY_AND_DISK, or --storage),
 * queried with SQL (count, a range, a grouping), written to Parquet, read
 * back and queried again — the queries of Spark's RDDRelation example that
 * SparkBench's SQL workload runs.
 */
final class RDDRelationWorkload implements Workload {
    public String name() {
        return "RDDRelation";
    }

    /** Record is one row: a key and "val_<key>". */
    public static final class Record implements Serializable {
        private static final long serialVersionUID = 1L;
        private int key;
        private String value;

        public Record() {}

        Record(int key) {
            this.key = key;
            this.value = "val_" + key;
        }

        public int getKey() {
            return key;
        }

        public void setKey(int key) {
            this.key = key;
        }

        public String getValue() {
            return value;
        }

        public void setValue(String value) {
            this.value = value;
        }
    }

    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) throws IOException {
        int n = p.n(50000);
        int parts = p.parts;
        JavaRDD<Record> rdd = Gen.indexes(sc, parts).flatMap(part -> {
            List<Record> out = new ArrayList<>();
            for (int k = part; k < n; k += parts) {
                out.add(new Record(k));
            }
            return out.iterator();
        });
        Dataset<Row> df = spark.createDataFrame(rdd, Record.class);
        df.createOrReplaceTempView("records");
        if (p.storage != null) {
            spark.catalog().cacheTable("records", p.storage);
        } else {
            spark.catalog().cacheTable("records");
        }
        long count = spark.sql("SELECT COUNT(*) FROM records").first().getLong(0);
        long low = spark.sql("SELECT key, value FROM records WHERE key < 10").collectAsList().size();
        long buckets = spark.sql("SELECT key % 100 AS bucket, count(*) AS n, max(value) AS top FROM records GROUP BY key % 100")
                .collectAsList().size();
        Path dir = Files.createTempDirectory(p.work.toPath(), "rddrelation-");
        File pq = dir.resolve("records.parquet").toFile();
        try {
            df.write().mode(SaveMode.Overwrite).parquet(pq.getPath());
            spark.read().parquet(pq.getPath()).createOrReplaceTempView("parquetFile");
            long fromParquet = spark.sql("SELECT * FROM parquetFile WHERE key BETWEEN 100 AND 199").count();
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("records", count);
            r.put("below_10", low);
            r.put("buckets", buckets);
            r.put("parquet_range", fromParquet);
            return r;
        } finally {
            try (Stream<Path> walk = Files.walk(dir)) {
                walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
