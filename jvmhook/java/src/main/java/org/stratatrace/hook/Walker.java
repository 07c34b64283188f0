package org.stratatrace.hook;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import com.sun.management.HotSpotDiagnosticMXBean;

/**
 * The walker of deserialized blocks' object graphs (docs/objectgraph.md):
 * its own daemon thread, strata-walk, walks each STRATA_BLOCK_OBJECT_GRAPH
 * block's objects ({@link GraphWalk}) and sends their address ranges in
 * WALK frames (Native.walk), in the order Spark stored the blocks.
 *
 * <p>Epochs: a walk starts only once the hook thread has rescanned every
 * finished collection (so its frame follows the MOVEs of its array), reads
 * the count of finished GCs before and after it runs and is thrown away
 * when they differ (three tries, then the block waits for the next
 * collection). After the hook thread's rescan for
 * collections (it wakes the walker once the rescan's GC frame, MOVEs and
 * column walks are queued; the walker checks only rescanned epochs, so
 * its CHECKED comes after them) the walker decides which walks still
 * hold: a full collection (or one it does not know) makes every walk stale;
 * a young one only the walks one of whose witnesses (the first object met in
 * each heap region) moved; pauses of no moving collection none. Stale walks
 * are sent as STALE and walked again; then CHECKED says every other walk
 * holds at the collections' epoch.
 *
 * <p>A new block is first walked after the next young collection (which
 * moves its new objects) or once no collection ran for QUIET_NS, whichever
 * comes first. When a stale block is walked again: at once after a full collection
 * (its objects are old now), and after a young one when a walk of the block
 * once held across a young collection (its objects are old; a mixed
 * collection moved them). A block whose objects are still young, which
 * every young collection moves until they are promoted, waits after its
 * k-th move in a row for 2^k - 1 more young collections (1, 3, 7, then 15),
 * or until no collection ran for QUIET_NS, whichever comes first.
 *
 * <p>Cost: the thread spends at most walk-cpu percent of one CPU (thread CPU
 * time against wall time, with a 200 ms burst) and sleeps when over; it
 * runs at nice walk-nice (10), so that Spark's threads go first when both
 * want a CPU. Spark
 * threads only queue a block or its end (a concurrent queue, and an unpark
 * when the walker is idle); everything else happens on strata-walk.
 *
 * <p>Memory: a valid walk keeps its {@link PageSet} (native memory) and its
 * witnesses (one reference and one address per region); both go when the
 * block is freed, found collected, or walked again. The block's array is
 * held weakly.
 *
 * <p>Everything is caught: a failed walk is counted and says why once on
 * stderr; the hook and the job go on.
 */
final class Walker {
    static final long DEFAULT_OBJECTS = 16L << 20;
    static final int DEFAULT_CPU = 5;
    static final int DEFAULT_NICE = 10;
    private static final long BURST_NS = 200_000_000L;
    private static final int TRIES = 3;
    private static final long IDLE_NS = TimeUnit.SECONDS.toNanos(5);
    private static final long FAILED_NS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final int DEFAULT_REGION = 64 << 10;
    /** Longest sleep while a collection awaits the hook thread's rescan. */
    private static final long RESCAN_WAIT_NS = TimeUnit.MILLISECONDS.toNanos(20);
    /** Young moves in a row after which the wait stops growing (2^4 - 1 = 15 collections). */
    private static final int MAX_BACKOFF = 4;
    /** A waiting block is walked once no collection ran for this long. */
    static final long QUIET_NS = TimeUnit.SECONDS.toNanos(1);

    // Options (Agent's walk=, walk-cpu=, walk-objects=), set before start.
    private static volatile boolean requested = true;
    private static volatile int cpuPercent = DEFAULT_CPU;
    private static volatile long objectLimit = DEFAULT_OBJECTS;
    private static volatile int nice = DEFAULT_NICE;

    /** Blocks announced by Spark threads, and blocks that ended. */
    private static final ConcurrentLinkedQueue<Block> EVENTS = new ConcurrentLinkedQueue<>();
    /** Live object-graph blocks by hook id, for Spark threads' forget. */
    private static final ConcurrentHashMap<Long, Block> LIVE = new ConcurrentHashMap<>();
    /** Whether blocks are accepted: until the walker decides not to walk. */
    private static volatile boolean accepting = true;
    private static volatile Walker running;
    private static volatile Thread thread;
    private static volatile boolean idle;
    private static long order;

    /** One walked (or to be walked) block; walker-thread state except dead. */
    static final class Block implements WalkIndex.Holder {
        final long id;
        final long seq;
        final WeakReference<Object[]> root;
        volatile boolean dead;
        boolean queued, valid;
        int tries;
        /** Young collections in a row that moved the block's walk. */
        int youngMoves;
        /** A walk of the block held across a young collection: its objects are old. */
        boolean old;
        /** Young collections the walker must have seen before the block's next walk. */
        long dueYoung;
        PageSet pages;
        Object[] witnessObj;
        long[] witnessAddr;

        Block(long id, long seq, Object[] root) {
            this.id = id;
            this.seq = seq;
            this.root = new WeakReference<>(root);
        }

        @Override
        public PageSet pages() {
            return pages;
        }

        @Override
        public long order() {
            return seq;
        }

        void release() {
            if (pages != null) {
                pages.free();
                pages = null;
            }
            witnessObj = null;
            witnessAddr = null;
            valid = false;
        }
    }

    // ---- options and start-up (any thread)

    /** Reads walk=, walk-cpu=, walk-objects=, walk-nice=; throws on a bad value. */
    static void configure(Map<String, String> opt) {
        String w = opt.getOrDefault("walk", "on");
        if (!w.equals("on") && !w.equals("off")) {
            throw new IllegalArgumentException("walk=" + w + ": want on or off");
        }
        requested = w.equals("on");
        int cpu = Integer.parseInt(opt.getOrDefault("walk-cpu", Integer.toString(DEFAULT_CPU)));
        if (cpu < 1 || cpu > 100) {
            throw new IllegalArgumentException("walk-cpu=" + cpu + ": want 1..100 (percent of one CPU)");
        }
        cpuPercent = cpu;
        long n = Long.parseLong(opt.getOrDefault("walk-objects", Long.toString(DEFAULT_OBJECTS)));
        if (n < 1) {
            throw new IllegalArgumentException("walk-objects=" + n + ": want at least 1");
        }
        objectLimit = n;
        int ni = Integer.parseInt(opt.getOrDefault("walk-nice", Integer.toString(DEFAULT_NICE)));
        if (ni < 0 || ni > 19) {
            throw new IllegalArgumentException("walk-nice=" + ni + ": want 0..19");
        }
        nice = ni;
    }

    /**
     * HELLO's walk mode as far as it can be decided at start, cheaply: off
     * by option, else 0: decided by the walker's thread at {@link #start}
     * (the collector's name needs the management beans, which cost a JVM
     * tens of milliseconds to start, and comes before the reference layout:
     * ZGC's coloured references also fail the calibration); the hook
     * connects only once it is decided.
     */
    static int startMode() {
        if (!requested) {
            accepting = false;
            return Wire.WALK_OFF;
        }
        return 0;
    }

    /** Starts strata-walk once (when Spark's environment is known); loader: Spark's. */
    static synchronized void start(ClassLoader sparkLoader) {
        if (thread != null || !accepting) {
            return;
        }
        Thread t = new Thread(new Starter(sparkLoader), "strata-walk");
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    /** The thread's body: decides the mode, then walks. */
    private static final class Starter implements Runnable {
        private final ClassLoader loader;

        Starter(ClassLoader loader) {
            this.loader = loader;
        }

        @Override
        public void run() {
            Walker w = null;
            int mode = Wire.WALK_NO_LAYOUT;
            int rc = Native.lowerPriority(nice);
            if (rc != 0) {
                Blocks.note("walk-nice", "walker thread keeps its priority: errno " + (-rc));
            }
            try {
                w = new Walker(loader);
                mode = w.mode;
            } catch (Throwable t) {
                Blocks.fail("walker start", t);
            } finally {
                if (mode != Wire.WALK_ON) {
                    accepting = false;
                    EVENTS.clear();
                    LIVE.clear();
                }
                Native.walkMode(mode);
            }
            if (mode == Wire.WALK_ON) {
                running = w;
                w.loop();
            }
        }
    }

    // ---- Spark threads and the hook thread

    /** A deserialized block's array to walk (a Spark thread, after its REGISTER). */
    static void add(long id, Object[] array) {
        if (!accepting) {
            return;
        }
        Block b;
        synchronized (Walker.class) {
            b = new Block(id, ++order, array);
        }
        LIVE.put(id, b);
        EVENTS.add(b);
        wakeIfIdle();
    }

    /** The block ended (FREE): its walk and memory go. */
    static void forget(long id) {
        if (LIVE.isEmpty()) {
            return;
        }
        Block b = LIVE.remove(id);
        if (b != null) {
            b.dead = true;
            EVENTS.add(b);
            wakeIfIdle();
        }
    }

    /** The hook thread queued a GC frame: collections to check. */
    static void wake() {
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    private static void wakeIfIdle() {
        Thread t = thread;
        if (idle && t != null) {
            LockSupport.unpark(t);
        }
    }

    /**
     * The exit line's part: walks sent, their objects, STALE marks, walks
     * cut, the thread's CPU time, walks a collection overlapped, failures.
     */
    static String counters() {
        Walker w = running;
        if (w == null) {
            return " walks=0 objects=0 stale=0 postponed=0 cut=0 walk-cpu-ms=0 overlapped=0 walk-errors=0";
        }
        long cpu = 0;
        try {
            Thread t = thread;
            cpu = w.threads.getThreadCpuTime(t.getId()) / 1_000_000;
        } catch (Throwable e) {
            // unknown: 0
        }
        return " walks=" + w.walks + " objects=" + w.walkedObjects + " stale=" + w.staleMarks + " postponed="
                + w.postponed + " cut=" + w.cuts
                + " walk-cpu-ms=" + Math.max(cpu, 0) + " overlapped=" + w.overlapped + " walk-errors=" + w.errors;
    }

    // ---- the walker's thread

    final int mode;
    private final List<GarbageCollectorMXBean> beans;
    private final long[] gcCounts;
    private final ThreadMXBean threads;
    private final boolean cpuTime;
    private final Layout.Table layouts;
    private final WalkIndex index = new WalkIndex();
    private GraphWalk walk;
    private final TreeMap<Long, Block> pending = new TreeMap<>();
    private final Set<Block> known = new HashSet<>();
    private final List<Block> deferred = new ArrayList<>();
    /** Blocks young collections keep moving, waiting for their next walk. */
    private final List<Block> waiting = new ArrayList<>();
    private int checkedEpoch;
    /** Young collections seen; when the latest collection was seen (nanoTime). */
    private long youngs, lastCollection = System.nanoTime();
    private final Object[] holder = new Object[1];
    // budget
    private long credit = BURST_NS, lastWall, lastCpu;
    // counters (read by the exit thread: plain longs, approximate at worst)
    volatile long walks, walkedObjects, staleMarks, cuts, overlapped, errors, postponed;

    private Walker(ClassLoader sparkLoader) {
        beans = ManagementFactory.getGarbageCollectorMXBeans();
        gcCounts = new long[beans.size()];
        for (int i = 0; i < gcCounts.length; i++) {
            gcCounts[i] = beans.get(i).getCollectionCount();
        }
        threads = ManagementFactory.getThreadMXBean();
        boolean c = false;
        try {
            c = threads.isCurrentThreadCpuTimeSupported();
            if (c && !threads.isThreadCpuTimeEnabled()) {
                threads.setThreadCpuTimeEnabled(true);
            }
        } catch (Throwable t) {
            c = false;
        }
        cpuTime = c;
        checkedEpoch = Native.rescannedEpoch();
        String unsupported = null;
        for (GarbageCollectorMXBean b : beans) {
            String n = b.getName();
            if (n.contains("ZGC") || n.contains("Shenandoah")) {
                unsupported = n;
            }
        }
        List<Class<?>> stops = Layout.jvmStops();
        for (String name : Layout.SPARK_STOPS) {
            try {
                stops.add(Class.forName(name, false, sparkLoader));
            } catch (Throwable t) {
                // not in this Spark (or no SQL): not a stop here
            }
        }
        layouts = new Layout.Table(stops);
        int align = 8, region = DEFAULT_REGION;
        String noLayout = ObjectAddress.available() ? null : "object references could not be decoded";
        try {
            HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            align = Integer.parseInt(hs.getVMOption("ObjectAlignmentInBytes").getValue());
            if (Boolean.parseBoolean(hs.getVMOption("UseG1GC").getValue())) {
                region = (int) Long.parseLong(hs.getVMOption("G1HeapRegionSize").getValue());
            }
        } catch (Throwable t) {
            if (noLayout == null) {
                noLayout = "object alignment unknown: " + t;
            }
        }
        int page = RawAccess.pageSize();
        if (noLayout == null && (Integer.bitCount(align) != 1 || Integer.bitCount(region) != 1
                || Integer.bitCount(page) != 1 || align * 64 > page)) {
            noLayout = "alignment " + align + ", region " + region + ", page " + page;
        }
        if (unsupported != null) {
            mode = Wire.WALK_UNSUPPORTED_GC;
            System.err.println("strata-hook: walking unsupported: " + unsupported);
        } else if (noLayout != null) {
            mode = Wire.WALK_NO_LAYOUT;
            System.err.println("strata-hook: walking off: " + noLayout);
        } else {
            mode = Wire.WALK_ON;
            walk = new GraphWalk(layouts, index, objectLimit, page, align, region);
        }
    }

    private void loop() {
        lastWall = System.nanoTime();
        lastCpu = cpuNow();
        for (;;) {
            try {
                drain();
                checkCollections();
                wakeWaiting(false);
                if (Native.gcEpoch() != Native.rescannedEpoch()) {
                    // A collection the hook thread has not rescanned yet:
                    // a walk now could reach the agent before the MOVEs of
                    // its array, which would then look like the array's
                    // own. The hook thread wakes the walker after its rescan.
                    LockSupport.parkNanos(this, RESCAN_WAIT_NS);
                    parked();
                    continue;
                }
                Map.Entry<Long, Block> e = pending.pollFirstEntry();
                if (e == null) {
                    idle = true;
                    if (EVENTS.isEmpty() && Native.rescannedEpoch() == checkedEpoch) {
                        long park = IDLE_NS;
                        if (!waiting.isEmpty()) {
                            park = Math.max(1, Math.min(park, lastCollection + QUIET_NS - System.nanoTime()));
                        }
                        LockSupport.parkNanos(this, park);
                        parked();
                    }
                    idle = false;
                    continue;
                }
                Block b = e.getValue();
                b.queued = false;
                pace(null);
                walk(b);
            } catch (Throwable t) {
                errors++;
                Blocks.fail("walker", t);
                LockSupport.parkNanos(this, FAILED_NS); // a failure that repeats must not spin
                parked();
            }
        }
    }

    /** Takes the Spark threads' news: new blocks queued, ended ones dropped. */
    private void drain() {
        Block b;
        while ((b = EVENTS.poll()) != null) {
            if (b.dead) {
                drop(b);
            } else if (known.add(b)) {
                // Its objects are new: the next young collection moves them.
                b.dueYoung = youngs + 1;
                waiting.add(b);
            }
        }
    }

    private void enqueue(Block b) {
        if (!b.queued && !b.dead) {
            b.queued = true;
            pending.put(b.seq, b);
        }
    }

    /** Forgets a block: out of every list and the index, its memory freed. */
    private void drop(Block b) {
        if (b.queued) {
            pending.remove(b.seq);
            b.queued = false;
        }
        if (b.valid) {
            index.remove(b);
        }
        b.release();
        known.remove(b);
        deferred.remove(b);
        waiting.remove(b);
    }

    /**
     * Queues the waiting blocks that are due: every one after a full
     * collection or QUIET_NS without a collection, else those whose young
     * collections are counted.
     */
    private void wakeWaiting(boolean all) {
        if (waiting.isEmpty()) {
            return;
        }
        boolean quiet = System.nanoTime() - lastCollection >= QUIET_NS;
        for (Iterator<Block> it = waiting.iterator(); it.hasNext();) {
            Block b = it.next();
            if (all || quiet || youngs >= b.dueYoung) {
                it.remove();
                enqueue(b);
            }
        }
    }

    /** Young collections a block waits after its k-th young move in a row: 2^k - 1, k from 1. */
    static long backoff(int k) {
        return (1L << Math.min(Math.max(k, 1), MAX_BACKOFF)) - 1;
    }

    private void walk(Block b) {
        Object[] root = b.root.get();
        if (root == null || b.dead) {
            drop(b);
            return;
        }
        int e0 = Native.gcEpoch();
        GraphWalk w = walk;
        try {
            w.run(root, b.seq, () -> pace(b));
        } catch (Throwable t) {
            discard(w);
            errors++;
            Blocks.fail("walk failed", t);
            deferred.add(b); // tried again after the next collection
            return;
        }
        root = null;
        int e1 = Native.gcEpoch();
        if (w.aborted || b.dead) {
            discard(w);
            return;
        }
        if (e0 != e1) {
            discard(w);
            overlapped++;
            if (++b.tries >= TRIES) {
                b.tries = 0;
                deferred.add(b);
                Blocks.note("walk", "collections overlapped the walk " + TRIES + " times; waiting for the next");
            } else {
                enqueue(b);
            }
            return;
        }
        if (w.opaqueWhy != null) {
            Blocks.note("opaque " + w.opaqueWhy, "objects counted, not followed: " + w.opaqueWhy);
        }
        long[] ext = w.pages.extents();
        int seq = Native.walk(b.id, e0, w.cut ? Wire.WALK_CUT : Wire.WALK_DONE, w.objects, w.bytes, w.sharedObjects,
                w.sharedBytes, w.opaqueObjects, ext, ext.length / 2);
        if (seq == 0) {
            discard(w);
            if (!b.dead && ext.length / 2 / Wire.WALK_EXTENTS_MAX >= 65535) {
                Blocks.note("walk too large", "a walk of " + ext.length / 2 + " extents is too large to send");
            }
            drop(b); // the block ended meanwhile, or its walk cannot be sent
            return;
        }
        b.tries = 0;
        b.pages = w.pages;
        w.pages = null;
        b.witnessObj = w.takeWitnessObjects();
        b.witnessAddr = w.witnessAddresses();
        b.valid = true;
        index.add(b, ext);
        for (WalkIndex.Holder h : w.overtaken) {
            Block later = (Block) h;
            if (later.valid) {
                // Its walk held objects of this earlier block: walked
                // again, it finds them shared.
                markStale(later, e0);
                enqueue(later);
            }
        }
        walks++;
        walkedObjects += w.objects;
        if (w.cut) {
            cuts++;
        }
    }

    private static void discard(GraphWalk w) {
        if (w.pages != null) {
            w.pages.free();
            w.pages = null;
        }
        w.takeWitnessObjects();
    }

    /**
     * After collections: marks the walks they made stale (STALE, queued
     * again), forgets blocks whose arrays were collected, and sends CHECKED
     * for the epoch every other walk holds at.
     */
    private void checkCollections() {
        int e = Native.rescannedEpoch();
        while (e != checkedEpoch) {
            boolean full = false, young = false;
            lastCollection = System.nanoTime();
            for (int i = 0; i < gcCounts.length; i++) {
                long c = beans.get(i).getCollectionCount();
                if (c != gcCounts[i]) {
                    long n = c - gcCounts[i];
                    gcCounts[i] = c;
                    switch (kind(beans.get(i).getName())) {
                        case YOUNG:
                            young = true;
                            youngs += n;
                            break;
                        case NONE:
                            break;
                        default:
                            full = true;
                    }
                }
            }
            List<Block> stale = new ArrayList<>();
            for (Iterator<Block> it = known.iterator(); it.hasNext();) {
                Block b = it.next();
                if (b.root.get() == null) {
                    it.remove();
                    drop(b);
                    continue;
                }
                if (!b.valid) {
                    continue;
                }
                if (full || (young && moved(b))) {
                    stale.add(b);
                } else if (young) {
                    b.old = true; // held across a young collection: its objects are old
                }
            }
            stale.sort((x, y) -> Long.compare(x.seq, y.seq));
            for (Block b : stale) {
                markStale(b, e);
                if (full || b.old) {
                    b.youngMoves = 0;
                    enqueue(b);
                } else {
                    b.dueYoung = youngs + backoff(++b.youngMoves);
                    waiting.add(b);
                    postponed++;
                }
            }
            wakeWaiting(full);
            for (Block b : deferred) {
                enqueue(b);
            }
            deferred.clear();
            int now = Native.rescannedEpoch();
            if (now != e) {
                e = now; // another collection meanwhile: check again for it
                continue;
            }
            Native.checked(e);
            checkedEpoch = e;
        }
    }

    /** Ends a valid walk: out of the index, its memory freed, STALE sent at epoch. */
    private void markStale(Block b, int epoch) {
        index.remove(b);
        b.release();
        Native.walk(b.id, epoch, Wire.WALK_STALE, 0, 0, 0, 0, 0, null, 0);
        staleMarks++;
    }

    private static final int NONE = 0, YOUNG = 1, FULL = 2;

    /** What a collector's collections do to objects, by its bean's name. */
    static int kind(String bean) {
        switch (bean) {
            case "G1 Young Generation":
            case "PS Scavenge":
            case "Copy":
            case "ParNew":
                return YOUNG;
            case "G1 Concurrent GC":
            case "Epsilon":
                return NONE;
            default:
                return FULL; // G1 Old Generation, PS MarkSweep, MarkSweepCompact, unknown
        }
    }

    /** Whether a witness of the block's walk is at another address now. */
    private boolean moved(Block b) {
        Object[] w = b.witnessObj;
        long[] a = b.witnessAddr;
        try {
            for (int i = 0; i < w.length; i++) {
                holder[0] = w[i];
                if (ObjectAddress.address(holder) != a[i]) {
                    return true;
                }
            }
            return false;
        } finally {
            holder[0] = null;
        }
    }

    /**
     * The thread's CPU time; where the JVM cannot tell, the wall time spent
     * not parked (see parked).
     */
    private long cpuNow() {
        return cpuTime ? threads.getCurrentThreadCpuTime() : System.nanoTime();
    }

    /** After a park: without CPU times, the time parked was not spent. */
    private void parked() {
        if (!cpuTime) {
            lastCpu = System.nanoTime();
        }
    }

    /**
     * The CPU budget: credit grows at walk-cpu percent of wall time, up to
     * BURST_NS, and the thread's CPU time spends it; while it is negative the
     * thread sleeps. False when the block being walked ended (the walk stops).
     */
    private boolean pace(Block b) {
        for (;;) {
            long now = System.nanoTime(), cpu = cpuNow();
            credit = Math.min(BURST_NS, credit + (now - lastWall) * cpuPercent / 100) - (cpu - lastCpu);
            lastWall = now;
            lastCpu = cpu;
            if (credit >= 0) {
                return b == null || !b.dead;
            }
            LockSupport.parkNanos(this, -credit * 100 / cpuPercent);
            parked();
        }
    }
}
