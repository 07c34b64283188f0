package org.stratatrace.hook;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;

/**
 * Addresses of objects, which JNI cannot give (GetPrimitiveArrayCritical is
 * for primitive arrays only). A reference slot holds either the object's
 * address (8-byte references) or a compressed one, address = base + (n << shift).
 * Neither base nor shift is hard-coded: {@link #calibrate} puts probe byte[]s
 * in a slot, asks the JVM for their data address through JNI, and solves for
 * base and shift, checking the answer on a third probe. When that fails (ZGC's
 * coloured pointers, an unknown encoding) object arrays are not reported and
 * object graphs are not walked.
 *
 * Also the rest of sun.misc.Unsafe the walker uses: reference and field
 * reads, field offsets, and native memory for its bitmaps. Unsafe is reached
 * through method handles (jdk.unsupported), so the agent compiles without
 * internal-API warnings.
 */
final class ObjectAddress {
    private ObjectAddress() {}

    private static final MethodHandle GET_INT;
    private static final MethodHandle GET_LONG;
    private static final MethodHandle BASE_OFFSET;
    private static final MethodHandle INDEX_SCALE;
    private static final MethodHandle GET_OBJECT;
    private static final MethodHandle FIELD_OFFSET;
    private static final MethodHandle ALLOCATE;
    private static final MethodHandle FREE;
    private static final MethodHandle SET_MEMORY;
    private static final MethodHandle PEEK;
    private static final MethodHandle POKE;
    private static final MethodHandle PAGE_SIZE;

    static {
        try {
            Class<?> uc = Class.forName("sun.misc.Unsafe");
            Field f = uc.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            Object u = f.get(null);
            MethodHandles.Lookup l = MethodHandles.lookup();
            GET_INT = l.findVirtual(uc, "getInt", MethodType.methodType(int.class, Object.class, long.class)).bindTo(u);
            GET_LONG = l.findVirtual(uc, "getLong", MethodType.methodType(long.class, Object.class, long.class)).bindTo(u);
            BASE_OFFSET = l.findVirtual(uc, "arrayBaseOffset", MethodType.methodType(int.class, Class.class)).bindTo(u);
            INDEX_SCALE = l.findVirtual(uc, "arrayIndexScale", MethodType.methodType(int.class, Class.class)).bindTo(u);
            GET_OBJECT = l.findVirtual(uc, "getObject", MethodType.methodType(Object.class, Object.class, long.class))
                    .bindTo(u);
            FIELD_OFFSET = l.findVirtual(uc, "objectFieldOffset", MethodType.methodType(long.class, Field.class))
                    .bindTo(u);
            ALLOCATE = l.findVirtual(uc, "allocateMemory", MethodType.methodType(long.class, long.class)).bindTo(u);
            FREE = l.findVirtual(uc, "freeMemory", MethodType.methodType(void.class, long.class)).bindTo(u);
            SET_MEMORY = l.findVirtual(uc, "setMemory",
                    MethodType.methodType(void.class, long.class, long.class, byte.class)).bindTo(u);
            PEEK = l.findVirtual(uc, "getLong", MethodType.methodType(long.class, long.class)).bindTo(u);
            POKE = l.findVirtual(uc, "putLong", MethodType.methodType(void.class, long.class, long.class)).bindTo(u);
            PAGE_SIZE = l.findVirtual(uc, "pageSize", MethodType.methodType(int.class)).bindTo(u);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static final long OBJ_BASE = baseOffset(Object[].class);
    static final int REF_SIZE = scale(Object[].class);
    static final long BYTE_BASE = baseOffset(byte[].class);
    static final long LONG_BASE = baseOffset(long[].class);

    private static volatile boolean ok;
    private static long base;
    private static int shift;

    static boolean available() {
        return ok;
    }

    private static long slot(Object[] holder) {
        return slot(holder, OBJ_BASE);
    }

    /** The raw value of the reference slot at offset of o (compressed or not). */
    private static long slot(Object o, long offset) {
        try {
            if (REF_SIZE == 8) {
                return (long) GET_LONG.invokeExact(o, offset);
            }
            return ((int) GET_INT.invokeExact(o, offset)) & 0xFFFFFFFFL;
        } catch (Throwable t) {
            throw new IllegalStateException("read reference slot: " + t, t);
        }
    }

    /** {slot value, object address} of a probe, read without a GC between. */
    private static long[] sample(byte[] probe) {
        Object[] holder = {probe};
        for (int i = 0; i < 100; i++) {
            long n1 = slot(holder);
            long data = Native.arrayAddress(probe);
            long n2 = slot(holder);
            if (n1 == n2 && data != 0) {
                return new long[] {n1, data - BYTE_BASE};
            }
        }
        return null;
    }

    /** Learns the reference encoding; returns a description or throws. */
    static String calibrate() {
        byte[][] probes = new byte[3][];
        long[][] s = new long[3][];
        Object[] spacer = new Object[3];
        for (int i = 0; i < 3; i++) {
            probes[i] = new byte[64 << i];
            spacer[i] = new long[1000 * (i + 1)]; // keep probes apart
            s[i] = sample(probes[i]);
            if (s[i] == null) {
                throw new IllegalStateException("probe address unstable");
            }
        }
        for (int sh = 0; sh <= 6; sh++) {
            long b0 = s[0][1] - (s[0][0] << sh);
            if (b0 == s[1][1] - (s[1][0] << sh) && b0 == s[2][1] - (s[2][0] << sh)
                    && (REF_SIZE == 4 || (sh == 0 && b0 == 0))) {
                base = b0;
                shift = sh;
                ok = true;
                return "references " + REF_SIZE + " bytes, base " + Long.toHexString(b0) + " shift " + sh;
            }
        }
        throw new IllegalStateException("reference encoding not linear (" + REF_SIZE + "-byte slots)");
    }

    /** Address of arr's first element now; 0 when unavailable. */
    static long dataStart(Object arr) {
        if (!ok || arr == null) {
            return 0;
        }
        Object[] holder = {arr};
        return base + (slot(holder) << shift) + OBJ_BASE;
    }

    /**
     * The address of the object whose reference holder[0] holds, now (its
     * header's first byte); the caller puts the object there and keeps the
     * holder, so that no array is allocated per object. Only after
     * {@link #available}.
     */
    static long address(Object[] holder) {
        return base + (slot(holder) << shift);
    }

    /**
     * The address of the object the reference slot at offset of o (a field
     * or an element) refers to, 0 for null: the slot decoded, not the
     * object looked at. Only after {@link #available}.
     */
    static long addressAt(Object o, long offset) {
        long n = slot(o, offset);
        return n == 0 ? 0 : base + (n << shift);
    }

    /** Unsafe.getObject: the reference at offset of o (a field or an element). */
    static Object reference(Object o, long offset) {
        try {
            return (Object) GET_OBJECT.invokeExact(o, offset);
        } catch (Throwable t) {
            throw new IllegalStateException("getObject: " + t, t);
        }
    }

    /**
     * Unsafe.objectFieldOffset of an instance field; throws for fields Unsafe
     * will not locate (those of hidden classes and records).
     */
    static long fieldOffset(Field f) {
        try {
            return (long) FIELD_OFFSET.invokeExact(f);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("objectFieldOffset: " + t, t);
        }
    }

    /** The OS page size, as the JVM knows it (Unsafe.pageSize). */
    static int pageSize() {
        try {
            return (int) PAGE_SIZE.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("pageSize: " + t, t);
        }
    }

    /** Native memory of n bytes, zeroed; the caller frees it with {@link #free}. */
    static long allocate(long n) {
        try {
            long a = (long) ALLOCATE.invokeExact(n);
            SET_MEMORY.invokeExact(a, n, (byte) 0);
            return a;
        } catch (OutOfMemoryError e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("allocateMemory: " + t, t);
        }
    }

    static void free(long address) {
        try {
            FREE.invokeExact(address);
        } catch (Throwable t) {
            throw new IllegalStateException("freeMemory: " + t, t);
        }
    }

    /** The long at a native address that {@link #allocate} returned (plus an offset within it). */
    static long peek(long address) {
        try {
            return (long) PEEK.invokeExact(address);
        } catch (Throwable t) {
            throw new IllegalStateException("getLong: " + t, t);
        }
    }

    static void poke(long address, long value) {
        try {
            POKE.invokeExact(address, value);
        } catch (Throwable t) {
            throw new IllegalStateException("putLong: " + t, t);
        }
    }

    /** Bytes per element of an array class (Unsafe.arrayIndexScale). */
    static int scale(Class<?> arrayClass) {
        try {
            return (int) INDEX_SCALE.invokeExact(arrayClass);
        } catch (Throwable t) {
            throw new IllegalStateException("arrayIndexScale: " + t, t);
        }
    }

    /** Offset of element 0 from the array's start (Unsafe.arrayBaseOffset). */
    static long baseOffset(Class<?> arrayClass) {
        try {
            return (int) BASE_OFFSET.invokeExact(arrayClass);
        } catch (Throwable t) {
            throw new IllegalStateException("arrayBaseOffset: " + t, t);
        }
    }
}
