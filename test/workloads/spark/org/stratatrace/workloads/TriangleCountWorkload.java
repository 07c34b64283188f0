package org.stratatrace.workloads;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.graphx.Graph;
import org.apache.spark.graphx.PartitionStrategy;
import org.apache.spark.graphx.lib.TriangleCount;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

/**
 * TriangleCount as SparkBench runs it: a log-normal graph cached at GraphX's
 * default levels (Graph.fromEdges's: MEMORY_ONLY; --storage sets both),
 * partitioned by random vertex cut, then GraphX's
 * TriangleCount (which canonicalises the edges and caches its own graph).
 */
final class TriangleCountWorkload implements Workload {
    public String name() {
        return "TriangleCount";
    }

    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) {
        int vertices = p.n(3000);
        Graph<Object, Object> g = Graph.fromEdges(Gen.logNormalEdges(sc, vertices, p.parts, p.seed).rdd(), (Object) 1,
                p.or(StorageLevel.MEMORY_ONLY()), p.or(StorageLevel.MEMORY_ONLY()), Gen.OBJECT, Gen.OBJECT)
                .partitionBy(PartitionStrategy.RandomVertexCut$.MODULE$);
        long edges = g.edges().count();
        Graph<Object, Object> tri = TriangleCount.run(g, Gen.OBJECT, Gen.OBJECT);
        long corners = tri.vertices().toJavaRDD().mapToDouble(v -> ((Integer) v._2()).doubleValue()).sum().longValue();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("vertices", vertices);
        r.put("edges", edges);
        r.put("triangles", corners / 3);
        return r;
    }
}
