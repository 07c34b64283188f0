package org.stratatrace.hook;

/**
 * Addresses of objects, which JNI cannot give (GetPrimitiveArrayCritical is
 * for primitive arrays only). A reference slot holds either the object's
 * address (8-byte references) or a compressed one, address = base + (n << shift).
 * Neither base nor shift is hard-coded: {@link #calibrate} puts probe byte[]s
 * in a slot, asks the JVM for their data address through JNI, and solves for
 * base and shift, checking the answer on a third probe. When that fails (ZGC's
 * coloured pointers, an unknown encoding) object arrays are not reported and
 * object graphs are not walked. The slots are read through {@link RawAccess}.
 */
final class ObjectAddress {
    private ObjectAddress() {}

    static final long OBJ_BASE = RawAccess.arrayBaseOffset(Object[].class);
    static final int REF_SIZE = RawAccess.arrayIndexScale(Object[].class);
    static final long BYTE_BASE = RawAccess.arrayBaseOffset(byte[].class);
    static final long LONG_BASE = RawAccess.arrayBaseOffset(long[].class);

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
}
