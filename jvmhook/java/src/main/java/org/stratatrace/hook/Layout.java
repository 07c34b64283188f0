package org.stratatrace.hook;

import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

/**
 * How the walker treats the objects of one class: a stop (not counted, not
 * followed), an instance whose reference fields it follows, an opaque
 * instance (counted, not followed), an array of references or of
 * primitives. Found once per class through {@link Table}, a ClassValue, and
 * used only on the walker's thread.
 *
 * Sizes are the JVM's: an array's is its base offset plus length times index
 * scale (both asked of the JVM through Unsafe) rounded up to the object
 * alignment; an instance's is the JVMTI GetObjectSize of the first instance
 * of its class the walker meets (an instance's size depends only on its
 * class).
 */
final class Layout {
    static final int STOP = 0;       // the JVM's or Spark's own: neither counted nor followed
    static final int FIELDS = 1;     // an instance: its reference fields are followed
    static final int OPAQUE = 2;     // an instance whose fields Unsafe cannot locate: counted only
    static final int OBJECTS = 3;    // an array of references (any dimension)
    static final int PRIMITIVES = 4; // an array of primitives

    final int kind;
    /** FIELDS: the offsets of the non-static reference fields, superclasses' included. */
    final long[] refs;
    /** Arrays: Unsafe.arrayBaseOffset and arrayIndexScale. */
    final long base, scale;
    /** OPAQUE: why (for the walker's one line on stderr). */
    final String why;
    /** Instances: bytes, 0 until the first instance is met. */
    private long size;

    private Layout(int kind, long[] refs, long base, long scale, String why) {
        this.kind = kind;
        this.refs = refs;
        this.base = base;
        this.scale = scale;
        this.why = why;
    }

    private static final long[] NONE = new long[0];

    /** Class.isHidden (Java 15) and Class.isRecord (Java 16); null on a JVM without them. */
    private static final Method IS_HIDDEN = classMethod("isHidden"), IS_RECORD = classMethod("isRecord");

    private static Method classMethod(String name) {
        try {
            return Class.class.getMethod(name);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** Whether c is a hidden class (a lambda's, since Java 15); false before Java 15. */
    static boolean isHidden(Class<?> c) {
        return ask(IS_HIDDEN, c);
    }

    /** Whether c is a record class; false before Java 16. */
    static boolean isRecord(Class<?> c) {
        return ask(IS_RECORD, c);
    }

    private static boolean ask(Method m, Class<?> c) {
        try {
            return m != null && (Boolean) m.invoke(c);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    /** The bytes o takes in the heap, align a power of two. */
    long size(Object o, long align) {
        if (kind == OBJECTS || kind == PRIMITIVES) {
            return (base + Array.getLength(o) * scale + align - 1) & -align;
        }
        long s = size;
        if (s == 0) {
            s = Native.objectSize(o);
            size = s;
        }
        return s;
    }

    /**
     * Layouts for one walker. The stops are classes whose instances (of them
     * or of subclasses) belong to the JVM or to Spark rather than to cached
     * data; packages listed in STOP_PACKAGES are stops whatever the class.
     */
    static final class Table extends ClassValue<Layout> {
        private final Class<?>[] stops;

        Table(List<Class<?>> stops) {
            this.stops = stops.toArray(new Class<?>[0]);
        }

        @Override
        protected Layout computeValue(Class<?> c) {
            try {
                if (c.isArray()) {
                    Class<?> e = c.getComponentType();
                    return new Layout(e.isPrimitive() ? PRIMITIVES : OBJECTS, NONE, RawAccess.arrayBaseOffset(c),
                            RawAccess.arrayIndexScale(c), null);
                }
                if (isStop(c)) {
                    return new Layout(STOP, NONE, 0, 0, null);
                }
                if (isHidden(c)) {
                    return opaque("hidden class " + c.getName());
                }
                if (isRecord(c)) {
                    return opaque("record " + c.getName());
                }
                List<Long> offsets = new ArrayList<>();
                for (Class<?> k = c; k != null; k = k.getSuperclass()) {
                    for (Field f : k.getDeclaredFields()) {
                        if (!Modifier.isStatic(f.getModifiers()) && !f.getType().isPrimitive()) {
                            offsets.add(RawAccess.objectFieldOffset(f));
                        }
                    }
                }
                long[] refs = new long[offsets.size()];
                for (int i = 0; i < refs.length; i++) {
                    refs[i] = offsets.get(i);
                }
                return new Layout(FIELDS, refs, 0, 0, null);
            } catch (Throwable t) {
                // Reflection failed (a field's type cannot load, Unsafe refuses
                // a field): the objects are counted, their fields not followed.
                return opaque(c.getName() + ": " + t);
            }
        }

        private static Layout opaque(String why) {
            return new Layout(OPAQUE, NONE, 0, 0, why);
        }

        private boolean isStop(Class<?> c) {
            String n = c.getName();
            for (String p : STOP_PACKAGES) {
                if (n.startsWith(p)) {
                    return true;
                }
            }
            for (Class<?> s : stops) {
                if (s.isAssignableFrom(c)) {
                    return true;
                }
            }
            return false;
        }
    }

    private static final String[] STOP_PACKAGES = {"java.lang.invoke.", "java.lang.reflect.", "jdk.internal.reflect."};

    /** The JVM's own stops, whatever the application. */
    static List<Class<?>> jvmStops() {
        List<Class<?>> l = new ArrayList<>();
        l.add(Class.class);
        l.add(ClassLoader.class);
        l.add(Thread.class);
        l.add(ThreadGroup.class);
        l.add(Module.class);
        l.add(ModuleLayer.class);
        l.add(java.lang.ref.Reference.class);
        l.add(java.security.ProtectionDomain.class);
        l.add(java.security.CodeSource.class);
        return l;
    }

    /** Spark's classes whose instances are stops, by name (those not found are left out). */
    static final String[] SPARK_STOPS = {
        "org.apache.spark.SparkContext",
        "org.apache.spark.SparkEnv",
        "org.apache.spark.SparkConf",
        "org.apache.spark.TaskContext",
        "org.apache.spark.broadcast.Broadcast",
        "org.apache.spark.rdd.RDD",
        "org.apache.spark.util.AccumulatorV2",
        "org.apache.spark.storage.BlockManager",
        "org.apache.spark.storage.BlockInfoManager",
        "org.apache.spark.storage.memory.MemoryStore",
        "org.apache.spark.memory.MemoryManager",
        "org.apache.spark.memory.TaskMemoryManager",
        "org.apache.spark.sql.SparkSession",
    };
}
