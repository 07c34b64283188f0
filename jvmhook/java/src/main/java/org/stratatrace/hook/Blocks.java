package org.stratatrace.hook;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the calls woven into Spark (see Weaver) reach: they turn MemoryStore
 * and TaskMemoryManager events into hook registrations. Public because the
 * woven code lives in Spark's packages; nothing else should call it.
 *
 * Every public method catches everything: the woven code has no handler of
 * its own, and the hook must never change what Spark does. The first failure
 * of each kind is printed to stderr, all are counted.
 *
 * State: the hook ids of every tracked storage block (one per range: a
 * ChunkedByteBuffer is one range per chunk, a cached DataFrame one per
 * column) keyed by Spark's BlockId, and of every tracked Tungsten
 * page keyed by its MemoryBlock (identity). A deserialized block's array of
 * references is also handed to the {@link Walker}, which is told when the
 * block ends.
 */
public final class Blocks {
    private Blocks() {}

    private static final ConcurrentHashMap<Object, long[]> STORED = new ConcurrentHashMap<>();
    private static final ConcurrentHashMap<Object, Long> PAGES = new ConcurrentHashMap<>();
    /** Per thread: {task attempt id, rdd id} of the task this thread runs. */
    private static final ThreadLocal<long[]> TASK_RDD = new ThreadLocal<>() {
        @Override
        protected long[] initialValue() {
            return new long[] {-1, -1};
        }
    };
    /**
     * Per thread: the RDDs cached deserialized in memory that the running
     * task computes (seen at RDD.iterator), weakly, for the column names of
     * a cached DataFrame (CachedBatches): {task attempt id, refs...}.
     */
    private static final ThreadLocal<Object[]> TASK_CACHED = new ThreadLocal<>() {
        @Override
        protected Object[] initialValue() {
            return new Object[1 + CACHED_RDDS];
        }
    };
    private static final int CACHED_RDDS = 4;
    /** Per thread: >0 while inside MemoryStore.evictBlocksToFreeSpace. */
    private static final ThreadLocal<int[]> EVICTING = new ThreadLocal<>() {
        @Override
        protected int[] initialValue() {
            return new int[1];
        }
    };
    private static final ConcurrentHashMap<String, Boolean> REPORTED = new ConcurrentHashMap<>();
    static final AtomicLong ERRORS = new AtomicLong();
    private static volatile boolean identified;
    static volatile boolean enabled;

    static void fail(String where, Throwable t) {
        ERRORS.incrementAndGet();
        try {
            if (REPORTED.putIfAbsent(where, Boolean.TRUE) == null) {
                System.err.println("strata-hook: " + where + ": " + t);
            }
        } catch (Throwable ignored) {
            // Counted; printing it failed too (out of memory, closed stderr).
        }
    }

    /** Says something once per key on stderr (not a failure). */
    static void note(String key, String what) {
        try {
            if (REPORTED.putIfAbsent(key, Boolean.TRUE) == null) {
                System.err.println("strata-hook: " + what);
            }
        } catch (Throwable ignored) {
            // printing failed: nothing else to do
        }
    }

    /** Sends the application and executor ids once SparkEnv has them. */
    private static void identify(Spark s) throws Throwable {
        if (identified) {
            return;
        }
        Object env = s.sparkEnvGet.invokeExact();
        if (env == null) {
            return;
        }
        Object conf = s.envConf.invokeExact(env);
        String app = (String) (Object) s.confGet.invokeExact(conf, "spark.app.id", (String) null);
        String exec = (String) (Object) s.executorId.invokeExact(env);
        if (app == null || exec == null) {
            return;
        }
        Walker.start(s.loader);
        Native.identify(app, exec);
        identified = true;
    }

    /** The running task on this thread: stage, stage attempt, partition, task attempt, rdd. */
    private static long[] task(Spark s) throws Throwable {
        Object tc = s.taskContextGet.invokeExact();
        if (tc == null) {
            return new long[] {-1, -1, -1, -1, -1};
        }
        long attempt = (long) s.taskAttemptId.invokeExact(tc);
        long[] tr = TASK_RDD.get();
        return new long[] {
            (int) s.stageId.invokeExact(tc), (int) s.stageAttempt.invokeExact(tc),
            (int) s.partitionId.invokeExact(tc), attempt, tr[0] == attempt ? tr[1] : -1,
        };
    }

    // ---- RDD.iterator: remember the first RDD a task computes (its stage's RDD)

    public static void rddIterator(Object rdd) {
        if (!enabled) {
            return;
        }
        try {
            Spark s = Spark.of(rdd);
            Object tc = s.taskContextGet.invokeExact();
            if (tc == null) {
                return;
            }
            long attempt = (long) s.taskAttemptId.invokeExact(tc);
            long[] tr = TASK_RDD.get();
            if (tr[0] != attempt) {
                tr[0] = attempt;
                tr[1] = (int) s.rddId.invokeExact(rdd);
            }
            Object level = s.rddStorageLevel.invokeExact(rdd);
            if (level != null && (boolean) s.levelUseMemory.invokeExact(level)
                    && (boolean) s.levelDeserialized.invokeExact(level)) {
                remember(attempt, rdd);
            }
        } catch (Throwable t) {
            fail("RDD.iterator", t);
        }
    }

    /** Keeps a cached RDD of this thread's task (the last CACHED_RDDS of them). */
    private static void remember(long attempt, Object rdd) {
        Object[] c = TASK_CACHED.get();
        if (!(c[0] instanceof Long) || (Long) c[0] != attempt) {
            java.util.Arrays.fill(c, null);
            c[0] = attempt;
        }
        int free = -1;
        for (int i = 1; i < c.length; i++) {
            Object r = c[i] == null ? null : ((java.lang.ref.WeakReference<?>) c[i]).get();
            if (r == rdd) {
                return;
            }
            if (r == null && free < 0) {
                free = i;
            }
        }
        if (free < 0) {
            System.arraycopy(c, 2, c, 1, c.length - 2);
            free = c.length - 1;
        }
        c[free] = new java.lang.ref.WeakReference<>(rdd);
    }

    /** The cached RDD of id rddId this thread's task computes, or null. */
    private static Object cachedRdd(Spark s, int rddId) throws Throwable {
        Object[] c = TASK_CACHED.get();
        for (int i = 1; i < c.length; i++) {
            Object r = c[i] == null ? null : ((java.lang.ref.WeakReference<?>) c[i]).get();
            if (r != null && (int) s.rddId.invokeExact(r) == rddId) {
                return r;
            }
        }
        return null;
    }

    // ---- MemoryStore

    /**
     * Per thread: the puts it is in, {depth, bit i set when the put at
     * depth i marked its fill}, so that every put's end undoes its own
     * begin, whatever failed in between (puts deeper than 64 mark nothing).
     */
    private static final ThreadLocal<long[]> FILLS = new ThreadLocal<>() {
        @Override
        protected long[] initialValue() {
            return new long[2];
        }
    };

    /**
     * The key of a block's fill marks: 64-bit FNV-1a over the UTF-16 units
     * of its name, one unit per step (agent/faults FillKey).
     */
    static long fillKey(String name) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < name.length(); i++) {
            h ^= name.charAt(i);
            h *= 0x100000001b3L;
        }
        return h;
    }

    /**
     * Before a put: marks this thread as filling the block
     * ({@link Native#fillBegin}), so that the node agent counts the page
     * faults the thread takes until the put ends as the block's fill.
     */
    public static void fillBegin(Object store, Object blockId) {
        long[] f = FILLS.get();
        int d = (int) f[0]++;
        if (d >= 64) {
            return;
        }
        f[1] &= ~(1L << d);
        if (!enabled || blockId == null) {
            return;
        }
        try {
            Spark s = Spark.of(store);
            identify(s);
            Native.fillBegin(fillKey((String) (Object) s.blockName.invokeExact(blockId)));
            f[1] |= 1L << d;
        } catch (Throwable t) {
            fail("MemoryStore put begin", t);
        }
    }

    /** Whether the put ending now marked its fill; pops it. */
    private static boolean fillMarked() {
        long[] f = FILLS.get();
        if (f[0] == 0) {
            return false; // begun before the hook was on
        }
        int d = (int) --f[0];
        return d < 64 && (f[1] >>> d & 1) != 0;
    }

    /** Ends this thread's innermost fill: stored when the put stored its block. */
    private static void fillEnd(boolean stored) {
        try {
            Native.fillEnd(stored ? 1 : 0);
        } catch (Throwable t) {
            fail("MemoryStore put end", t);
        }
    }

    /** A put threw: its fill, if marked, ends unstored. */
    public static void put() {
        try {
            if (fillMarked()) {
                fillEnd(false);
            }
        } catch (Throwable t) {
            fail("MemoryStore put end", t);
        }
    }

    /**
     * After a put: ends its fill (before the REGISTER, so that the agent
     * finds the fill when the REGISTER comes) and registers the block if
     * the put stored it.
     */
    public static void put(Object store, Object blockId) {
        boolean marked;
        try {
            marked = fillMarked();
        } catch (Throwable t) {
            fail("MemoryStore put end", t);
            return;
        }
        if (!enabled || blockId == null) {
            if (marked) {
                fillEnd(false);
            }
            return;
        }
        try {
            Spark s = Spark.of(store);
            identify(s);
            @SuppressWarnings("unchecked")
            Map<Object, Object> map = (Map<Object, Object>) (Object) s.entries.invokeExact(store);
            Object entry;
            synchronized (map) {
                entry = map.get(blockId);
            }
            if (marked) {
                marked = false;
                fillEnd(entry != null);
            }
            if (entry == null || STORED.containsKey(blockId)) {
                return; // not stored (partially unrolled, no memory) or known
            }
            long[] ids = registerEntry(s, blockId, entry);
            if (ids.length == 0) {
                return;
            }
            long[] prev = STORED.put(blockId, ids);
            free(prev, Wire.FREE_REMOVED);
            boolean still;
            synchronized (map) {
                still = map.get(blockId) == entry;
            }
            if (!still && STORED.remove(blockId, ids)) {
                free(ids, Wire.FREE_REMOVED); // removed while we registered it
            }
            // The REGISTER is the put's write (ALLOC): no ACCESS frame on top,
            // so a put costs one frame per range.
        } catch (Throwable t) {
            if (marked) {
                fillEnd(false);
            }
            fail("MemoryStore put", t);
        }
    }

    private static long[] registerEntry(Spark s, Object blockId, Object entry) throws Throwable {
        String name = (String) (Object) s.blockName.invokeExact(blockId);
        int kind = kind(blockId);
        int rdd = -1;
        int part = -1;
        if (s.rddBlockId.isInstance(blockId)) {
            rdd = (int) s.rddBlockRdd.invokeExact(blockId);
            part = (int) s.rddBlockSplit.invokeExact(blockId);
        }
        long[] t = task(s);
        long sparkBytes = (long) s.entrySize.invokeExact(entry);
        if (s.serializedEntry.isInstance(entry)) {
            Object cbb = s.serializedBuffer.invokeExact(entry);
            ByteBuffer[] chunks = (ByteBuffer[]) (Object) s.chunks.invokeExact(cbb);
            int n = 0;
            for (ByteBuffer b : chunks) {
                if (b != null && b.limit() > 0) {
                    n++;
                }
            }
            long[] ids = new long[n];
            int i = 0;
            for (ByteBuffer b : chunks) {
                if (b == null || b.limit() <= 0) {
                    continue;
                }
                long id;
                if (b.isDirect()) {
                    id = Native.register(Native.DIRECT, b, 0, b.limit(), rdd, part, Wire.MODE_STORAGE,
                            Wire.LOCATION_OFF_HEAP, kind, 0, i, n, (int) t[0], (int) t[1], t[3], -1, sparkBytes, name,
                            null);
                } else if (b.hasArray()) {
                    id = Native.register(Native.HEAP_ARRAY, b.array(), b.arrayOffset(), b.limit(), rdd, part,
                            Wire.MODE_STORAGE, Wire.LOCATION_ON_HEAP, kind, 0, i, n, (int) t[0], (int) t[1], t[3],
                            -1, sparkBytes, name, null);
                } else {
                    id = 0; // a read-only heap buffer hides its array
                }
                if (id != 0) {
                    ids[i] = id;
                }
                i++;
            }
            return compact(ids);
        }
        if (s.deserializedEntry.isInstance(entry)) {
            Object value = s.deserializedValue.invokeExact(entry);
            if (value == null || !value.getClass().isArray()) {
                return new long[0];
            }
            int len = java.lang.reflect.Array.getLength(value);
            if (len == 0) {
                return new long[0];
            }
            boolean refs = value instanceof Object[];
            if (refs) {
                int batch = CachedBatches.kind((Object[]) value);
                if (batch != CachedBatches.NOT_BATCH) {
                    Object[] batches = (Object[]) value;
                    int columns = CachedBatches.columns(batches, batch);
                    String[] names = columns > 0 ? CachedBatches.names(cachedRdd(s, rdd), rdd, columns) : null;
                    return compact(CachedBatches.register(batches, batch, rdd, part, kind, t, sparkBytes, name,
                            names));
                }
                if (!ObjectAddress.available()) {
                    return new long[0];
                }
            }
            long bytes = (long) len * RawAccess.arrayIndexScale(value.getClass());
            long id = Native.register(refs ? Native.OBJECT_ARRAY : Native.HEAP_ARRAY, value, 0, bytes, rdd, part,
                    Wire.MODE_STORAGE, Wire.LOCATION_ON_HEAP, kind, refs ? Wire.BLOCK_OBJECT_GRAPH : 0, 0, 1,
                    (int) t[0], (int) t[1], t[3], -1, sparkBytes, name, null);
            if (id != 0 && refs) {
                Walker.add(id, (Object[]) value);
            }
            return id == 0 ? new long[0] : new long[] {id};
        }
        return new long[0];
    }

    private static long[] compact(long[] ids) {
        int n = 0;
        for (long id : ids) {
            if (id != 0) {
                n++;
            }
        }
        if (n == ids.length) {
            return ids;
        }
        long[] out = new long[n];
        n = 0;
        for (long id : ids) {
            if (id != 0) {
                out[n++] = id;
            }
        }
        return out;
    }

    /** The wire kind of a BlockId, by its class (org.apache.spark.storage.*BlockId). */
    static int kind(Object blockId) {
        String c = blockId.getClass().getSimpleName();
        switch (c) {
            case "RDDBlockId":
                return Wire.KIND_RDD;
            case "BroadcastBlockId":
                return Wire.KIND_BROADCAST;
            case "TaskResultBlockId":
                return Wire.KIND_TASK_RESULT;
            case "StreamBlockId":
                return Wire.KIND_STREAM;
            default:
                return c.startsWith("Shuffle") ? Wire.KIND_SHUFFLE : Wire.KIND_OTHER;
        }
    }

    private static void free(long[] ids, int reason) {
        if (ids != null) {
            for (long id : ids) {
                Native.free(id, reason);
                Walker.forget(id);
            }
        }
    }

    /** After getBytes/getValues: a read of a tracked block. */
    public static void read(Object blockId) {
        if (!enabled || blockId == null) {
            return;
        }
        try {
            long[] ids = STORED.get(blockId);
            if (ids != null) {
                for (long id : ids) {
                    Native.access(id, 0, 0, Wire.ACCESS_READ);
                }
            }
        } catch (Throwable t) {
            fail("MemoryStore get", t);
        }
    }

    /** Before MemoryStore.remove: the block is going, evicted or removed. */
    public static void remove(Object blockId) {
        if (!enabled || blockId == null) {
            return;
        }
        try {
            long[] ids = STORED.remove(blockId);
            if (ids != null) {
                free(ids, EVICTING.get()[0] > 0 ? Wire.FREE_EVICTED : Wire.FREE_REMOVED);
            }
        } catch (Throwable t) {
            fail("MemoryStore remove", t);
        }
    }

    /** Entering MemoryStore.evictBlocksToFreeSpace. */
    public static void evictEnter() {
        if (!enabled) {
            return;
        }
        try {
            EVICTING.get()[0]++;
        } catch (Throwable t) {
            fail("MemoryStore evictBlocksToFreeSpace", t);
        }
    }

    /** Leaving MemoryStore.evictBlocksToFreeSpace, by a return or a throw. */
    public static void evictExit() {
        if (!enabled) {
            return;
        }
        try {
            int[] e = EVICTING.get();
            if (e[0] > 0) {
                e[0]--;
            }
        } catch (Throwable t) {
            fail("MemoryStore evictBlocksToFreeSpace", t);
        }
    }

    /** Before MemoryStore.clear: every storage block ends. */
    public static void clear() {
        if (!enabled) {
            return;
        }
        try {
            for (Object k : STORED.keySet()) {
                free(STORED.remove(k), Wire.FREE_CLEARED);
            }
        } catch (Throwable t) {
            fail("MemoryStore clear", t);
        }
    }

    // ---- TaskMemoryManager

    /** After allocatePage (3.5) / allocatePageInternal (4.x): a new page. */
    public static void allocated(Object tmm, Object page) {
        if (!enabled || page == null) {
            return;
        }
        try {
            if (PAGES.containsKey(page)) {
                return; // allocatePageInternal returning to allocatePage (4.x)
            }
            Spark s = Spark.of(tmm);
            identify(s);
            Object obj = s.pageObject.invokeExact(page);
            long off = (long) s.pageOffset.invokeExact(page);
            long size = (long) s.pageSize.invokeExact(page);
            int number = (int) s.pageNumber.invokeExact(page);
            long taskAttempt = (long) s.tmmTaskAttempt.invokeExact(tmm);
            if (size <= 0) {
                return;
            }
            long[] t = task(s);
            if (t[3] != taskAttempt) {
                t = new long[] {-1, -1, -1, taskAttempt, -1}; // allocated off the task's thread
            }
            String name = "page_" + taskAttempt + "_" + number;
            long id;
            if (obj == null) {
                id = Native.register(Native.ADDRESS, null, off, size, (int) t[4], (int) t[2], Wire.MODE_EXECUTION,
                        Wire.LOCATION_OFF_HEAP, Wire.KIND_TUNGSTEN_PAGE, 0, 0, 1, (int) t[0], (int) t[1], t[3], -1,
                        size, name, null);
            } else {
                long dataOff = off - RawAccess.arrayBaseOffset(obj.getClass());
                id = Native.register(Native.HEAP_ARRAY, obj, dataOff, size, (int) t[4], (int) t[2],
                        Wire.MODE_EXECUTION, Wire.LOCATION_ON_HEAP, Wire.KIND_TUNGSTEN_PAGE, 0, 0, 1, (int) t[0],
                        (int) t[1], t[3], -1, size, name, null);
            }
            if (id != 0 && PAGES.putIfAbsent(page, id) != null) {
                Native.free(id, Wire.FREE_PAGE_FREED); // another exit advice got there first
            }
        } catch (Throwable t) {
            fail("TaskMemoryManager allocatePage", t);
        }
    }

    /** Before freePage: the consumer gives the page back. */
    public static void freePage(Object page) {
        if (!enabled || page == null) {
            return;
        }
        try {
            Long id = PAGES.remove(page);
            if (id != null) {
                Native.free(id, Wire.FREE_PAGE_FREED);
            }
        } catch (Throwable t) {
            fail("TaskMemoryManager freePage", t);
        }
    }

    /** Forgets a live page the task's end frees, if it is tracked. */
    private static void endPage(Object page) {
        Long id = PAGES.remove(page);
        if (id != null) {
            Native.free(id, Wire.FREE_TASK_END);
        }
    }

    /** Before cleanUpAllAllocatedMemory: pages still in the table end with the task. */
    public static void cleanup(Object tmm) {
        if (!enabled) {
            return;
        }
        if (PAGES.isEmpty()) {
            return; // no page of any task is live: the common case outside Spark SQL
        }
        try {
            Spark s = Spark.of(tmm);
            Object[] table = (Object[]) (Object) s.pageTable.invokeExact(tmm);
            synchronized (tmm) {
                if (PAGES.size() < table.length) {
                    // Fewer live pages than the table's 8192 slots: each is this
                    // task's when the table holds it at its page number.
                    for (Object page : PAGES.keySet()) {
                        int number = (int) s.pageNumber.invokeExact(page);
                        if (number >= 0 && number < table.length && table[number] == page) {
                            endPage(page);
                        }
                    }
                } else {
                    for (Object page : table) {
                        if (page != null) {
                            endPage(page);
                        }
                    }
                }
            }
        } catch (Throwable t) {
            fail("TaskMemoryManager cleanUpAllAllocatedMemory", t);
        }
    }
}
