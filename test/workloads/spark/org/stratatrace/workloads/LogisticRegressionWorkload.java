package org.stratatrace.workloads;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.mllib.classification.LogisticRegressionModel;
import org.apache.spark.mllib.classification.LogisticRegressionWithSGD;
import org.apache.spark.mllib.regression.LabeledPoint;
import org.apache.spark.mllib.util.LogisticRegressionDataGenerator;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;

/**
 * LogisticRegression as SparkBench runs it: MLlib's logistic data
 * generator, the training set cached (cache(): MEMORY_ONLY, or --storage),
 * SGD over it, accuracy on it.
 * LogisticRegressionWithSGD lost its static train() in Spark 3; its
 * constructor (stepSize, iterations, regParam, miniBatchFraction) and run()
 * remain in 3.5 and 4.
 */
final class LogisticRegressionWorkload implements Workload {
    public String name() {
        return "LogisticRegression";
    }

    @SuppressWarnings("deprecation")
    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) {
        int n = p.n(10000), d = 20, iterations = 10;
        JavaRDD<LabeledPoint> data = LogisticRegressionDataGenerator
                .generateLogisticRDD(sc.sc(), n, d, 3.0, p.parts, 0.5).toJavaRDD();
        data.setName("lr-training").persist(p.or(StorageLevel.MEMORY_ONLY()));
        long count = data.count();
        LogisticRegressionModel model = new LogisticRegressionWithSGD(1.0, iterations, 0.0, 1.0).run(data.rdd());
        long right = data.filter(pt -> model.predict(pt.features()) == pt.label()).count();
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("examples", count);
        r.put("features", d);
        r.put("iterations", iterations);
        r.put("accuracy", (double) right / count);
        return r;
    }
}
