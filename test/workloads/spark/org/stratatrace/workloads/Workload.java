package org.stratatrace.workloads;

import java.util.Map;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

/** Workload is one of SMTT's eight. */
interface Workload {
    String name();

    /** run does the work and returns what it computed (for the JSON line). */
    Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) throws Exception;

    Workload[] ALL = {
        new LogisticRegressionWorkload(), new SVMWorkload(), new ALSWorkload(), new PageRankWorkload(),
        new SVDPlusPlusWorkload(), new TriangleCountWorkload(), new RDDRelationWorkload(), new PageViewStreamWorkload(),
    };

    static Workload named(String name) {
        for (Workload w : ALL) {
            if (w.name().equalsIgnoreCase(name)) {
                return w;
            }
        }
        StringBuilder known = new StringBuilder();
        for (Workload w : ALL) {
            known.append(' ').append(w.name());
        }
        throw new IllegalArgumentException("unknown workload " + name + "; known:" + known);
    }
}
