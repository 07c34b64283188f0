package org.stratatrace.workloads;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.mllib.classification.SVMModel;
import org.apache.spark.mllib.classification.SVMWithSGD;
import org.apache.spark.mllib.regression.LabeledPoint;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

/**
 * SVM as SparkBench runs it: linearly separable points with noise, the
 * training set cached (cache(): MEMORY_ONLY, or --storage), SVMWithSGD.train
 * over it, accuracy on it.
 */
final class SVMWorkload implements Workload {
    public String name() {
        return "SVM";
    }

    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) {
        int n = p.n(10000), d = 20, iterations = 10;
        JavaRDD<LabeledPoint> data = Gen.linear(sc, n, d, p.parts, p.seed);
        data.setName("svm-training").persist(p.or(StorageLevel.MEMORY_ONLY()));
        long count = data.count();
        SVMModel model = SVMWithSGD.train(data.rdd(), iterations);
        long right = data.filter(pt -> model.predict(pt.features()) == pt.label()).count();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("examples", count);
        r.put("features", d);
        r.put("iterations", iterations);
        r.put("accuracy", (double) right / count);
        return r;
    }
}
