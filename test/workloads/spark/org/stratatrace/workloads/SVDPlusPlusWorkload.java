package org.stratatrace.workloads;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.graphx.Edge;
import org.apache.spark.graphx.Graph;
import org.apache.spark.graphx.lib.SVDPlusPlus;
import org.apache.spark.sql.SparkSession;

import scala.Tuple2;
import scala.Tuple4;

/**
 * SVDPlusPlus as SparkBench runs it: the rated edges of a log-normal graph
 * cached (cache(): MEMORY_ONLY whatever --storage says, since SVD++ calls
 * cache() on its input), GraphX's SVD++ over them (which caches its model
 * graph at GraphX's levels), then the mean of the model's error term.
 */
final class SVDPlusPlusWorkload implements Workload {
    public String name() {
        return "SVDPlusPlus";
    }

    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) {
        int vertices = p.n(1000), rank = 8, iterations = 2;
        JavaRDD<Edge<Object>> rated = Gen.logNormalEdges(sc, vertices, p.parts, p.seed)
                .map(e -> new Edge<Object>(e.srcId(), e.dstId(), (Object) (1.0 + Math.floorMod(e.srcId() * 31 + e.dstId(), 5L))));
        // SVD++ calls cache() on its input, so the edges are cached as
        // SparkBench caches them: MEMORY_ONLY (any other level would clash).
        rated.setName("svdpp-edges").cache();
        long edges = rated.count();
        SVDPlusPlus.Conf conf = new SVDPlusPlus.Conf(rank, iterations, 0.0, 5.0, 0.007, 0.007, 0.005, 0.015);
        Tuple2<Graph<Tuple4<double[], double[], Object, Object>, Object>, Object> res = SVDPlusPlus.run(rated.rdd(), conf);
        Graph<Tuple4<double[], double[], Object, Object>, Object> model = res._1();
        long triplets = model.triplets().count();
        double err = model.vertices().toJavaRDD()
                .mapToDouble(v -> ((Long) v._1()) % 2 == 1 ? (Double) v._2()._4() : 0.0).sum() / Math.max(1, triplets);
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("edges", edges);
        r.put("rank", rank);
        r.put("iterations", iterations);
        r.put("mean", res._2());
        r.put("err", err);
        return r;
    }
}
