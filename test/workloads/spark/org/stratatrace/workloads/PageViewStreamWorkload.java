package org.stratatrace.workloads;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.receiver.Receiver;

import scala.Tuple2;

/**
 * PageViewStream, the streaming workload: a receiver generates page views
 * ("url\tstatus\tzip\tuser", the format of Spark's PageViewGenerator) at a
 * fixed rate, and the job computes the page-view metrics of Spark's
 * PageViewStream example over them: page counts per batch, a sliding count
 * per URL, the error rate per zip code and the active users over windows.
 * The receiver's blocks are stored at the level of the socket source it
 * stands in for (socketTextStream's MEMORY_AND_DISK_SER_2: in local mode
 * there is no peer to take the second copy), or --storage; Spark persists
 * the windowed streams (MEMORY_ONLY_SER). Batches are two seconds. The source makes a fixed number
 * of views (the rate times ten seconds) and stops; the run ends once every
 * view was counted, so two runs do the same work.
 * DStreams are deprecated (Spark 3.4) but present in 3.5 and 4.
 */
final class PageViewStreamWorkload implements Workload {
    public String name() {
        return "PageViewStream";
    }

    static final AtomicLong VIEWS = new AtomicLong();
    static final AtomicLong BATCHES = new AtomicLong();
    static final AtomicLong ACTIVE = new AtomicLong();
    static final AtomicLong URLS = new AtomicLong();

    @SuppressWarnings("deprecation")
    public Map<String, Object> run(SparkSession spark, JavaSparkContext sc, Params p) throws Exception {
        int perSecond = p.n(500), seconds = 10;
        long total = (long) perSecond * seconds;
        Path ckpt = Files.createTempDirectory(p.work.toPath(), "pageview-");
        JavaStreamingContext ssc = new JavaStreamingContext(sc, Durations.seconds(2));
        try {
            ssc.checkpoint(ckpt.toString());
            JavaDStream<String> views = ssc.receiverStream(new Generator(p.or(StorageLevel.MEMORY_AND_DISK_SER_2()), perSecond, total, p.seed));
            JavaDStream<String[]> fields = views.map(l -> l.split("\t"));
            fields.foreachRDD(rdd -> {
                VIEWS.addAndGet(rdd.count());
                BATCHES.incrementAndGet();
            });
            // pageCounts and slidingPageCounts
            fields.map(f -> f[0]).countByValue().foreachRDD(rdd -> {
                rdd.count();
            });
            fields.map(f -> f[0]).countByValueAndWindow(Durations.seconds(8), Durations.seconds(4))
                    .foreachRDD(rdd -> {
                        URLS.accumulateAndGet(rdd.count(), Math::max);
                    });
            // errorRatePerZipCode
            fields.window(Durations.seconds(12), Durations.seconds(4))
                    .mapToPair(f -> new Tuple2<>(f[2], f[1].equals("200") ? 0 : 1))
                    .groupByKey()
                    .mapValues(st -> {
                        long bad = 0, all = 0;
                        for (int s : st) {
                            bad += s;
                            all++;
                        }
                        return (double) bad / all;
                    })
                    .foreachRDD(rdd -> {
                        rdd.collect();
                    });
            // activeUserCount
            fields.window(Durations.seconds(8), Durations.seconds(2))
                    .mapToPair(f -> new Tuple2<>(f[3], 1))
                    .groupByKey()
                    .count()
                    .foreachRDD(rdd -> {
                        for (Long c : rdd.collect()) {
                            ACTIVE.accumulateAndGet(c, Math::max);
                        }
                    });
            ssc.start();
            long deadline = System.currentTimeMillis() + 120_000 * p.scale;
            while (VIEWS.get() < total && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
        } finally {
            ssc.stop(false, true); // graceful: what was received is processed
            try (Stream<Path> walk = Files.walk(ckpt)) {
                walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException e) {
                // the checkpoint directory is temporary; a leftover is harmless
            }
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("views_per_second", perSecond);
        r.put("views_made", total);
        r.put("batches", BATCHES.get());
        r.put("views", VIEWS.get());
        r.put("urls_in_window", URLS.get());
        r.put("active_users", ACTIVE.get());
        return r;
    }

    /** Generator is the page-view source: a receiver that makes them up. */
    static final class Generator extends Receiver<String> {
        private static final long serialVersionUID = 1L;
        private static final String[] PAGES = {"/", "/news", "/contact", "/about", "/products", "/products/1", "/products/2", "/cart"};
        private static final double[] WEIGHTS = {0.45, 0.2, 0.05, 0.05, 0.1, 0.07, 0.05, 0.03};
        private static final String[] ZIPS = {"94709", "94117", "94702", "10001", "60601"};
        private final int perSecond;
        private final long total;
        private final long seed;
        private transient volatile Thread thread;

        Generator(StorageLevel level, int perSecond, long total, long seed) {
            super(level);
            this.perSecond = perSecond;
            this.total = total;
            this.seed = seed;
        }

        @Override
        public void onStart() {
            thread = new Thread(this::generate, "pageview-generator");
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void onStop() {
            Thread t = thread;
            if (t != null) {
                t.interrupt();
            }
        }

        private void generate() {
            Random r = new Random(seed);
            int tick = 10; // ms
            int perTick = Math.max(1, perSecond * tick / 1000);
            long next = System.currentTimeMillis();
            for (long made = 0; made < total && !isStopped() && !Thread.currentThread().isInterrupted(); ) {
                for (int i = 0; i < perTick && made < total; i++, made++) {
                    store(view(r));
                }
                next += tick;
                long wait = next - System.currentTimeMillis();
                if (wait > 0) {
                    try {
                        Thread.sleep(wait);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }

        private static String view(Random r) {
            double x = r.nextDouble();
            int page = 0;
            for (double acc = WEIGHTS[0]; x > acc && page < PAGES.length - 1; acc += WEIGHTS[++page]) {
            }
            String status = r.nextDouble() < 0.95 ? "200" : "404";
            return "http://foo.com" + PAGES[page] + "\t" + status + "\t" + ZIPS[r.nextInt(ZIPS.length)] + "\t" + (1 + r.nextInt(100));
        }
    }
}
