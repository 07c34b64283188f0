package org.stratatrace.workloads;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.mllib.recommendation.ALS;
import org.apache.spark.mllib.recommendation.MatrixFactorizationModel;
import org.apache.spark.mllib.recommendation.Rating;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

import scala.Tuple2;

/**
 * MatrixFactorization as SparkBench runs it: MLlib's ALS over cached
 * ratings (cache(): MEMORY_ONLY), then the RMSE of its predictions. ALS
 * caches its own rating, user and product blocks at its own levels
 * (intermediate and final RDDs: MEMORY_AND_DISK). --storage sets all of them.
 */
final class ALSWorkload implements Workload {
    public String name() {
        return "ALS";
    }

    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) {
        int users = p.n(500), products = 1000, perUser = 25, rank = 8, iterations = 5;
        JavaRDD<Rating> ratings = Gen.ratings(sc, users, products, perUser, p.parts, p.seed);
        ratings.setName("als-ratings").persist(p.or(StorageLevel.MEMORY_ONLY()));
        long count = ratings.count();
        ALS als = new ALS().setRank(rank).setIterations(iterations).setLambda(0.01).setBlocks(p.parts).setSeed(p.seed);
        if (p.storage != null) {
            als.setIntermediateRDDStorageLevel(p.storage).setFinalRDDStorageLevel(p.storage);
        }
        MatrixFactorizationModel model = als.run(ratings.rdd());
        JavaPairRDD<Tuple2<Integer, Integer>, Double> truth =
                ratings.mapToPair(x -> new Tuple2<>(new Tuple2<>(x.user(), x.product()), x.rating()));
        JavaPairRDD<Tuple2<Integer, Integer>, Double> predicted = model
                .predict(ratings.mapToPair(x -> new Tuple2<>(x.user(), x.product())))
                .mapToPair(x -> new Tuple2<>(new Tuple2<>(x.user(), x.product()), x.rating()));
        double mse = truth.join(predicted).mapToDouble(x -> {
            double e = x._2()._1() - x._2()._2();
            return e * e;
        }).mean();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("ratings", count);
        r.put("rank", rank);
        r.put("iterations", iterations);
        r.put("rmse", Math.sqrt(mse));
        return r;
    }
}
