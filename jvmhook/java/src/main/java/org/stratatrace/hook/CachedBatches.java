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
import java.util.concurrent.atomic.AtomicLong;

/**
 * Cached DataFrames and Datasets: a deserialized entry whose values are
 * Spark SQL CachedBatch objects. The default serializer's batch,
 * org.apache.spark.sql.execution.columnar.DefaultCachedBatch (Spark 3.5 and
 * 4), holds one byte[] per column of the cached plan's output
 * ({@code buffers()}); Spark 4's ArrowCachedBatch one byte[] for all
 * ({@code arrowData()}). Each column of the block is registered as one hook
 * block (chunk = the column's index, chunks = the columns; an Arrow block is
 * one, column -1) with, when found, the column's name; the native registry
 * keeps a weak reference to the block's array of batches and the column,
 * and asks {@link #buffers} for the addresses of the column's buffers when
 * it registers the column and after every collection (one call per
 * column: the references are decoded here, no JNI call per buffer). A
 * batch whose buffer count differs from the first batch's, or a null or
 * empty buffer, is left out of its column: counted ({@link #LEFT_OUT}) and
 * said once on stderr. Batches of any other CachedBatch class are not
 * registered (said once on stderr).
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

    /** Unsafe's offset of ArrowCachedBatch's arrowData field. */
    private static final ClassValue<Long> ARROW_SLOT = new ClassValue<>() {
        @Override
        protected Long computeValue(Class<?> c) {
            try {
                return RawAccess.objectFieldOffset(c.getDeclaredField("arrowData"));
            } catch (NoSuchFieldException e) {
                throw new IllegalStateException("Spark member not found: " + c.getName() + ".arrowData", e);
            }
        }
    };

    /** Buffers left out of their column since start (see the class comment). */
    static final AtomicLong LEFT_OUT = new AtomicLong();

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
     * Registers each column of the block as a hook block (an Arrow block as
     * one, column -1); returns the hook ids (some may be 0: not registered,
     * a column without a buffer). The label of column i is names[i] when
     * the batches have names.length buffers.
     */
    static long[] register(Object[] batches, int kind, int rdd, int part, int blockKind, long[] task, long sparkBytes,
            String name, String[] names) throws Throwable {
        if (kind == OTHER_BATCH) {
            Blocks.note("batch " + batches[0].getClass().getName(), "cached batches of "
                    + batches[0].getClass().getName() + " are not reported (only " + DEFAULT + " and " + ARROW + ")");
            return new long[0];
        }
        int columns = kind == ARROW_BATCH ? 1 : columns(batches, kind);
        long left = leftOut(batches, kind, columns);
        if (left > 0) {
            LEFT_OUT.addAndGet(left);
            Blocks.note("cached batch buffers left out", "cached batch buffers not reported: a batch of another "
                    + "column count than the block's first, or a null or empty buffer (counted in left-out=)");
        }
        long[] ids = new long[Math.max(columns, 0)];
        for (int c = 0; c < ids.length; c++) {
            int column = kind == ARROW_BATCH ? -1 : c;
            String label = names != null && names.length == columns && column >= 0 ? names[c] : "";
            ids[c] = Native.register(Native.CACHED_COLUMN, batches, 0, 0, rdd, part, Wire.MODE_STORAGE,
                    Wire.LOCATION_ON_HEAP, blockKind, Wire.BLOCK_CACHED_BATCH, c, ids.length, (int) task[0],
                    (int) task[1], task[3], column, sparkBytes, name, label);
        }
        return ids;
    }

    /** The buffers no column of the block reports (see {@link #buffers}). */
    static long leftOut(Object[] batches, int kind, int columns) throws Throwable {
        long n = 0;
        for (Object b : batches) {
            if (b == null) {
                continue;
            }
            if (KIND.get(b.getClass()) != kind) {
                n++;
                continue;
            }
            Object buf = (Object) BUFFERS.get(b.getClass()).invokeExact(b);
            if (kind == ARROW_BATCH) {
                n += buf instanceof byte[] && ((byte[]) buf).length > 0 ? 0 : 1;
                continue;
            }
            byte[][] cols = (byte[][]) buf;
            if (cols.length != columns) {
                n += cols.length;
                continue;
            }
            for (byte[] c : cols) {
                n += c != null && c.length > 0 ? 0 : 1;
            }
        }
        return n;
    }

    /**
     * The buffers of one column of a cached DataFrame block (column -1:
     * Arrow batches' buffer of every column), for the native registry:
     * {n, vaddr_0, length_0, ...}, the data of the column's buffer in each
     * batch that has one, in batch order (the batches of another column
     * count than the first's, and null or empty buffers, left out), written
     * into reuse when it is long enough, else into a new array. An address
     * is the reference slot that holds the buffer decoded (ObjectAddress),
     * read before and after the reference itself: when the two differ a
     * collection moved the buffer in between, and it is read again. The
     * native caller tells a collection that moved buffers between two of
     * them by its count of started collections. Null when the batches are
     * not of the column's kind.
     */
    static long[] buffers(Object[] batches, int column, long[] reuse) throws Throwable {
        int kind = kind(batches);
        if (kind != (column < 0 ? ARROW_BATCH : DEFAULT_BATCH)) {
            return null;
        }
        long[] out = reuse != null && reuse.length >= 1 + 2 * batches.length ? reuse : new long[1 + 2 * batches.length];
        int n = 0, width = -1;
        for (Object b : batches) {
            if (b == null || KIND.get(b.getClass()) != kind) {
                continue;
            }
            Object holder = b;
            long slot;
            if (kind == DEFAULT_BATCH) {
                byte[][] cols = (byte[][]) (Object) BUFFERS.get(b.getClass()).invokeExact(b);
                if (width < 0) {
                    width = cols.length;
                }
                if (cols.length != width || column >= width) {
                    continue;
                }
                holder = cols;
                slot = ObjectAddress.OBJ_BASE + (long) column * ObjectAddress.REF_SIZE;
            } else {
                slot = ARROW_SLOT.get(b.getClass());
            }
            if (buffer(holder, slot, out, 1 + 2 * n)) {
                n++;
            }
        }
        out[0] = n;
        return out;
    }

    /**
     * Writes the data start and length of the byte[] that the reference at
     * offset of holder refers to into out[at] and out[at + 1]; false when
     * it is null or empty.
     */
    private static boolean buffer(Object holder, long offset, long[] out, int at) {
        for (;;) {
            long a = ObjectAddress.available() ? ObjectAddress.addressAt(holder, offset) : 0;
            Object o = RawAccess.getObject(holder, offset);
            if (!(o instanceof byte[]) || ((byte[]) o).length == 0) {
                return false;
            }
            long data;
            if (ObjectAddress.available()) {
                if (ObjectAddress.addressAt(holder, offset) != a) {
                    continue;
                }
                data = a + ObjectAddress.BYTE_BASE;
            } else {
                // References that are not addresses (generational ZGC):
                // the JVM's own answer, one JNI call per buffer.
                data = Native.arrayAddress(o);
                if (data == 0) {
                    return false;
                }
            }
            out[at] = data;
            out[at + 1] = ((byte[]) o).length;
            return true;
        }
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
        return Layout.isHidden(c) || c.isSynthetic() || n.contains("$$Lambda") || n.contains("$anonfun$");
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
