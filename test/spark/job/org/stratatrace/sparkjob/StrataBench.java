package org.stratatrace.sparkjob;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.storage.RDDBlockId;
import org.apache.spark.storage.memory.MemoryStore;
import org.apache.spark.util.io.ChunkedByteBuffer;

import com.sun.management.OperatingSystemMXBean;

import scala.reflect.ClassTag$;

/**
 * The per-call cost of the hook inside a real executor (local[1]): Spark's
 * own MemoryStore, called directly in a loop. Run once with the hook and once
 * without; test/spark's BenchmarkHook prints the ratios.
 *
 *   get:  MemoryStore.getBytes of a block that is not stored (instrumented,
 *         nothing to report)
 *   put:  putBytes of a 4 KiB heap block and remove of it (with the hook:
 *         one REGISTER and one FREE frame written to the agent's socket)
 *
 * Prints {"get_ns":..,"put_remove_ns":..,"get_cpu_ns":..,"put_remove_cpu_ns":..}
 * per call, after a warm-up: wall time, and the CPU time of the whole JVM
 * (every thread: the hook's sender, GC and JIT included), which other work
 * on the machine disturbs much less than wall time.
 */
public final class StrataBench {
    public static void main(String[] args) {
        int n = Integer.parseInt(args.length > 0 ? args[0] : "200000");
        SparkConf conf = new SparkConf().setMaster("local[1]").setAppName("strata-bench")
                .set("spark.ui.enabled", "false");
        JavaSparkContext sc = new JavaSparkContext(conf);
        sc.parallelize(java.util.List.of(1), 1).count(); // the hook learns the app id
        MemoryStore ms = SparkEnv.get().blockManager().memoryStore();
        RDDBlockId missing = new RDDBlockId(999999, 0);
        ChunkedByteBuffer data = new ChunkedByteBuffer(ByteBuffer.wrap(new byte[4096]));
        RDDBlockId[] ids = new RDDBlockId[1024];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = new RDDBlockId(888888, i);
        }
        OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long sink = 0;
        double get = 0, put = 0, getCpu = 0, putCpu = 0;
        for (int round = 0; round < 3; round++) { // the last round is measured
            long c0 = os.getProcessCpuTime();
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                sink += ms.getBytes(missing).isDefined() ? 1 : 0;
            }
            long t1 = System.nanoTime();
            long c1 = os.getProcessCpuTime();
            int m = n / 20;
            for (int i = 0; i < m; i++) {
                RDDBlockId id = ids[i & (ids.length - 1)];
                ms.putBytes(id, 4096, MemoryMode.ON_HEAP, () -> data, ClassTag$.MODULE$.Any());
                ms.remove(id);
            }
            long t2 = System.nanoTime();
            long c2 = os.getProcessCpuTime();
            get = (double) (t1 - t0) / n;
            put = (double) (t2 - t1) / m;
            getCpu = (double) (c1 - c0) / n;
            putCpu = (double) (c2 - c1) / m;
        }
        sc.stop();
        System.out.printf("{\"get_ns\":%.1f,\"put_remove_ns\":%.1f,\"get_cpu_ns\":%.1f,\"put_remove_cpu_ns\":%.1f,\"sink\":%d}%n",
                get, put, getCpu, putCpu, sink);
    }
}
