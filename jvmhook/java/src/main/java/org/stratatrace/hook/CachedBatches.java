package org.stratatrace.hook;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Cached DataFrames and Datasets: a deserialized entry whose values are
 * Spark SQL CachedBatch objects. The default serializer's batch,
 * org.apache.spark.sql.execution.columnar.DefaultCachedBatch (Spark 3.5 and
 * 4), holds one byte[] per column of the cached plan's output
 * ({@code buffers()}); Spark 4's ArrowCachedBatch one byte[] for all
 * ({@code arrowData()}). Every buffer of every batch is registered as one
 * chunk of the block (a heap array, followed through GC moves), with its
 * column index (-1 for Arrow) and, when found, the column's name. Batches of
 * any other CachedBatch class are not registered (said once on stderr).
 *
 * Column names: the block's RDD is the MapPartitionsRDD that Spark's
 * CachedRDDBuilder.buildBuffers makes over the RDD the cache serializer
 * returned (convertInternalRowToCachedBatch or
 * convertColumnarBatchToCachedBatch), whose closure captures the cached
 * plan's output, a Seq of Attribute. The task thread's cached RDDs are
 * remembered as they pass RDD.iterator ({@link Blocks#rddIterator}); the
 * search goes through RDDs' and closures' fields, breadth first, at most
 * MAX_DEPTH fields deep and MAX_OBJECTS objects, for a Seq of Attribute
 * as long as the batch has buffers. Found names are kept per RDD id; none
 * found, the label stays empty.
 */
final class CachedBatches {
    private CachedBatches() {}

    static final String DEFAULT = "org.apache.spark.sql.execution.columnar.DefaultCachedBatch";
    static final String ARROW = "org.apache.spark.sql.execution.columnar.ArrowCachedBatch";
    private static final String CACHED_BATCH = "org.apache.spark.sql.columnar.CachedBatch";
    private static final int MAX_DEPTH = 6;
    private static final int MAX_OBJECTS = 256;

    static final int NOT_BATCH = 0, DEFAULT_BATCH = 1, ARROW_BATCH = 2, OTHER_BATCH = 3;

    /** What a value class is, as a CachedBatch. */
    private static final ClassValue<Integer> KIND = new ClassValue<>() {
        @Override
        protected Integer computeValue(Class<?> c) {
            if (c.getName().equals(DEFAULT)) {
                return DEFAULT_BATCH;
            }
            if (c.getName().equals(ARROW)) {
                return ARROW_BATCH;
            }
            return implementsBatch(c) ? OTHER_BATCH : NOT_BATCH;
        }
    };

    /** The buffers getter of a batch class: byte[][] buffers() or byte[] arrowData(). */
    private static final ClassValue<MethodHandle> BUFFERS = new ClassValue<>() {
        @Override
        protected MethodHandle computeValue(Class<?> c) {
            try {
                MethodHandles.Lookup l = MethodHandles.privateLookupIn(c, MethodHandles.lookup());
                if (c.getName().equals(DEFAULT)) {
                    return l.findVirtual(c, "buffers", MethodType.methodType(byte[][].class))
                            .asType(MethodType.methodType(Object.class, Object.class));
                }
                return l.findVirtual(c, "arrowData", MethodType.methodType(byte[].class))
                        .asType(MethodType.methodType(Object.class, Object.class));
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("Spark member not found: " + c.getName() + " buffers", e);
            }
        }
    };

    private static boolean implementsBatch(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            for (Class<?> i : k.getInterfaces()) {
                if (i.getName().equals(CACHED_BATCH) || implementsBatch(i)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The kind of a deserialized entry's values: that of its first non-null one. */
    static int kind(Object[] values) {
        for (Object v : values) {
            if (v != null) {
                return KIND.get(v.getClass());
            }
        }
        return NOT_BATCH;
    }

    /**
     * Registers every buffer of every batch as a chunk; returns the hook ids
     * (some may be 0: not registered). The label of column i is names[i]
     * when the batch has names.length buffers.
     */
    static long[] register(Object[] batches, int kind, int rdd, int part, int blockKind, long[] task, long sparkBytes,
            String name, String[] names) throws Throwable {
        if (kind == OTHER_BATCH) {
            Blocks.note("batch " + batches[0].getClass().getName(), "cached batches of "
                    + batches[0].getClass().getName() + " are not reported (only " + DEFAULT + " and " + ARROW + ")");
            return new long[0];
        }
        int n = 0;
        Object[] got = new Object[batches.length];
        for (int i = 0; i < batches.length; i++) {
            Object b = batches[i];
            if (b == null || KIND.get(b.getClass()) != kind) {
                continue;
            }
            Object buf = (Object) BUFFERS.get(b.getClass()).invokeExact(b);
            got[i] = buf;
            if (buf instanceof byte[][]) {
                for (byte[] c : (byte[][]) buf) {
                    n += c != null && c.length > 0 ? 1 : 0;
                }
            } else if (buf instanceof byte[] && ((byte[]) buf).length > 0) {
                n++;
            }
        }
        long[] ids = new long[n];
        int chunk = 0;
        for (Object buf : got) {
            if (buf instanceof byte[][]) {
                byte[][] cols = (byte[][]) buf;
                for (int c = 0; c < cols.length; c++) {
                    if (cols[c] != null && cols[c].length > 0) {
                        String label = names != null && names.length == cols.length ? names[c] : "";
                        ids[chunk] = chunk(cols[c], c, label, chunk, n, rdd, part, blockKind, task, sparkBytes, name);
                        chunk++;
                    }
                }
            } else if (buf instanceof byte[] && ((byte[]) buf).length > 0) {
                ids[chunk] = chunk((byte[]) buf, -1, "", chunk, n, rdd, part, blockKind, task, sparkBytes, name);
                chunk++;
            }
        }
        return ids;
    }

    private static long chunk(byte[] buf, int column, String label, int chunk, int chunks, int rdd, int part,
            int blockKind, long[] task, long sparkBytes, String name) {
        return Native.register(Native.HEAP_ARRAY, buf, 0, buf.length, rdd, part, Wire.MODE_STORAGE,
                Wire.LOCATION_ON_HEAP, blockKind, Wire.BLOCK_CACHED_BATCH, chunk, chunks, (int) task[0], (int) task[1],
                task[3], column, sparkBytes, name, label);
    }

    /** Names found per RDD id; an empty array: searched, none found. */
    private static final ConcurrentHashMap<Integer, String[]> NAMES = new ConcurrentHashMap<>();

    /** The batches' column names for the RDD rdd (id rddId), or null. */
    static String[] names(Object rdd, int rddId, int columns) {
        String[] n = NAMES.get(rddId);
        if (n == null) {
            n = rdd == null ? null : search(rdd, columns);
            if (n == null) {
                if (rdd == null) {
                    return null; // not seen on this thread: another put may find it
                }
                n = new String[0];
            }
            NAMES.putIfAbsent(rddId, n);
        }
        return n.length == columns ? n : null;
    }

    /** The columns of a batch of values: those of its first buffer array. */
    static int columns(Object[] batches, int kind) throws Throwable {
        if (kind != DEFAULT_BATCH) {
            return -1;
        }
        for (Object b : batches) {
            if (b != null && KIND.get(b.getClass()) == DEFAULT_BATCH) {
                return ((byte[][]) (Object) BUFFERS.get(b.getClass()).invokeExact(b)).length;
            }
        }
        return -1;
    }

    /** Breadth first from the RDD for a Seq of Attribute of `columns` elements. */
    private static String[] search(Object rdd, int columns) {
        try {
            ClassLoader l = rdd.getClass().getClassLoader();
            Class<?> seq = Class.forName("scala.collection.Seq", false, l);
            Class<?> attribute = Class.forName("org.apache.spark.sql.catalyst.expressions.Attribute", false, l);
            Class<?> rddClass = Class.forName("org.apache.spark.rdd.RDD", false, l);
            Method length = seq.getMethod("length");
            Method apply = seq.getMethod("apply", int.class);
            Method name = attribute.getMethod("name");
            ArrayDeque<Object[]> queue = new ArrayDeque<>(); // {object, depth}
            Map<Object, Boolean> seen = new IdentityHashMap<>();
            queue.add(new Object[] {rdd, 0});
            seen.put(rdd, Boolean.TRUE);
            while (!queue.isEmpty() && seen.size() < MAX_OBJECTS) {
                Object[] q = queue.poll();
                Object o = q[0];
                int depth = (Integer) q[1];
                if (seq.isInstance(o)) {
                    String[] found = attributes(o, columns, length, apply, name, attribute);
                    if (found != null) {
                        return found;
                    }
                    continue;
                }
                if (depth >= MAX_DEPTH || !(rddClass.isInstance(o) || isClosure(o.getClass()))) {
                    continue;
                }
                for (Class<?> k = o.getClass(); k != null && k != Object.class; k = k.getSuperclass()) {
                    if (k.getName().startsWith("java.")) {
                        break;
                    }
                    for (Field f : k.getDeclaredFields()) {
                        if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) {
                            continue;
                        }
                        Object v;
                        try {
                            f.setAccessible(true);
                            v = f.get(o);
                        } catch (RuntimeException e) {
                            continue; // a field reflection cannot read
                        }
                        if (v != null && seen.put(v, Boolean.TRUE) == null) {
                            queue.add(new Object[] {v, depth + 1});
                        }
                    }
                }
            }
        } catch (Throwable t) {
            Blocks.note("column names", "column names of cached batches not found: " + t);
        }
        return null;
    }

    /** A lambda or Scala closure: its fields are what it captured. */
    private static boolean isClosure(Class<?> c) {
        String n = c.getName();
        return c.isHidden() || c.isSynthetic() || n.contains("$$Lambda") || n.contains("$anonfun$");
    }

    private static String[] attributes(Object s, int columns, Method length, Method apply, Method name,
            Class<?> attribute) throws ReflectiveOperationException {
        int n = (Integer) length.invoke(s);
        if (n != columns) {
            return null;
        }
        String[] out = new String[n];
        for (int i = 0; i < n; i++) {
            Object a = apply.invoke(s, i);
            if (!attribute.isInstance(a)) {
                return null;
            }
            out[i] = String.valueOf(name.invoke(a));
        }
        return out;
    }
}
