package org.stratatrace.workloads;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.graphx.Graph;
import org.apache.spark.graphx.lib.PageRank;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

/**
 * PageRank as SparkBench runs it: a log-normal graph whose edges and
 * vertices are cached at GraphX's default levels (Graph.fromEdges's edge and
 * vertex levels: MEMORY_ONLY; --storage sets both), then GraphX's static
 * PageRank, which caches each iteration's rank graph itself.
 */
final class PageRankWorkload implements Workload {
    public String name() {
        return "PageRank";
    }

    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) {
        int vertices = p.n(3000), iterations = 5;
        Graph<Object, Object> g = Graph.fromEdges(Gen.logNormalEdges(sc, vertices, p.parts, p.seed).rdd(), (Object) 1,
                p.or(StorageLevel.MEMORY_ONLY()), p.or(StorageLevel.MEMORY_ONLY()), Gen.OBJECT, Gen.OBJECT);
        long edges = g.edges().count();
        Graph<Object, Object> ranks = PageRank.run(g, iterations, 0.15, Gen.OBJECT, Gen.OBJECT);
        double sum = ranks.vertices().toJavaRDD().mapToDouble(v -> (Double) v._2()).sum();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("vertices", g.vertices().count());
        r.put("edges", edges);
        r.put("iterations", iterations);
        r.put("rank_sum", sum);
        return r;
    }
}
