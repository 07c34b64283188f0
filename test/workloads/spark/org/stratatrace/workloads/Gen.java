package org.stratatrace.workloads;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.graphx.Edge;
import org.apache.spark.graphx.Graph;
import org.apache.spark.graphx.util.GraphGenerators;
import org.apache.spark.mllib.linalg.Vectors;
import org.apache.spark.mllib.recommendation.Rating;
import org.apache.spark.mllib.regression.LabeledPoint;

import scala.reflect.ClassTag;

/** Gen makes the workloads' inputs, each partition from its own seed. */
final class Gen {
    private Gen() {}

    static final ClassTag<Object> OBJECT = scala.reflect.ClassTag$.MODULE$.apply(Object.class);

    /** indexes is 0..parts-1 in parts partitions: one generator per partition. */
    static JavaRDD<Integer> indexes(JavaSparkContext sc, int parts) {
        List<Integer> ix = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            ix.add(i);
        }
        return sc.parallelize(ix, parts);
    }

    /**
     * linear is SparkBench's SVM input: points uniform in [-1,1]^d, label 1
     * where w.x + noise >= 0 for a fixed random w, else 0.
     */
    static JavaRDD<LabeledPoint> linear(JavaSparkContext sc, int n, int d, int parts, long seed) {
        double[] w = new double[d];
        Random wr = new Random(seed);
        for (int j = 0; j < d; j++) {
            w[j] = wr.nextDouble() * 2 - 1;
        }
        return indexes(sc, parts).flatMap(part -> {
            Random r = new Random(seed + 1 + part);
            int count = n / parts + (part < n % parts ? 1 : 0);
            List<LabeledPoint> out = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                double[] x = new double[d];
                double dot = 0;
                for (int j = 0; j < d; j++) {
                    x[j] = r.nextDouble() * 2 - 1;
                    dot += w[j] * x[j];
                }
                double y = dot + 0.1 * r.nextGaussian() >= 0 ? 1.0 : 0.0;
                out.add(new LabeledPoint(y, Vectors.dense(x)));
            }
            return out.iterator();
        });
    }

    /**
     * ratings of users by products from a low-rank model plus noise, each
     * user rating perUser products, values in [1, 5].
     */
    static JavaRDD<Rating> ratings(JavaSparkContext sc, int users, int products, int perUser, int parts, long seed) {
        return indexes(sc, parts).flatMap(part -> {
            final int rank = 4;
            List<Rating> out = new ArrayList<>();
            for (int u = part; u < users; u += parts) {
                Random r = new Random(seed * 31 + u);
                double[] uf = new double[rank];
                for (int k = 0; k < rank; k++) {
                    uf[k] = r.nextDouble();
                }
                for (int i = 0; i < perUser; i++) {
                    int p = r.nextInt(products);
                    Random pr = new Random(seed * 17 + p);
                    double v = 0;
                    for (int k = 0; k < rank; k++) {
                        v += uf[k] * pr.nextDouble();
                    }
                    double rating = Math.max(1, Math.min(5, 1 + v * 1.6 + 0.2 * r.nextGaussian()));
                    out.add(new Rating(u, p, rating));
                }
            }
            return out.iterator();
        });
    }

    /**
     * edges of a graph like SparkBench's graph inputs: GraphX's log-normal
     * graph generator, which SparkBench's graph data generators use, with
     * mu 2 and sigma 1 (mean out-degree about 12) instead of SparkBench's
     * 4 and 1.3 (about 127), so that small sizes stay small.
     */
    static JavaRDD<Edge<Object>> logNormalEdges(JavaSparkContext sc, int vertices, int parts, long seed) {
        Graph<Object, Object> g = GraphGenerators.logNormalGraph(sc.sc(), vertices, parts, 2.0, 1.0, seed);
        return g.edges().toJavaRDD();
    }
}
