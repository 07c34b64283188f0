package org.stratatrace.hook;

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
 * Also the rest of sun.misc.Unsafe the walker uses ({@link RawAccess}):
 * reference and field reads, field offsets, and native memory for its
 * bitmaps.
 */
final class ObjectAddress {
    private ObjectAddress() {}

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
        if (REF_SIZE == 8) {
            return RawAccess.getLong(o, offset);
        }
        return RawAccess.getInt(o, offset) & 0xFFFFFFFFL;
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
        return RawAccess.getObject(o, offset);
    }

    /**
     * Unsafe.objectFieldOffset of an instance field; throws for fields Unsafe
     * will not locate (those of hidden classes and records).
     */
    static long fieldOffset(Field f) {
        return RawAccess.objectFieldOffset(f);
    }

    /** The OS page size, as the JVM knows it (Unsafe.pageSize). */
    static int pageSize() {
        return RawAccess.pageSize();
    }

    /** Native memory of n bytes, zeroed; the caller frees it with {@link #free}. */
    static long allocate(long n) {
        long a = RawAccess.allocateMemory(n);
        RawAccess.setMemory(a, n, (byte) 0);
        return a;
    }

    static void free(long address) {
        RawAccess.freeMemory(address);
    }

    /** The long at a native address that {@link #allocate} returned (plus an offset within it). */
    static long peek(long address) {
        return RawAccess.getLong(address);
    }

    static void poke(long address, long value) {
        RawAccess.putLong(address, value);
    }

    /** Bytes per element of an array class (Unsafe.arrayIndexScale). */
    static int scale(Class<?> arrayClass) {
        return RawAccess.arrayIndexScale(arrayClass);
    }

    /** Offset of element 0 from the array's start (Unsafe.arrayBaseOffset). */
    static long baseOffset(Class<?> arrayClass) {
        return RawAccess.arrayBaseOffset(arrayClass);
    }
}
