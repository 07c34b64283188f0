package org.stratatrace.hook;

import java.lang.reflect.Field;

/**
 * The hook's one use of sun.misc.Unsafe (module jdk.unsupported): reads of
 * reference slots and fields, field and array offsets, and native memory
 * for the walker's bitmaps, as static methods small enough that the JIT
 * inlines each call whole into its caller. {@link ObjectAddress} says what
 * the values of reference slots mean.
 *
 * javac warns at every mention of sun.misc.Unsafe and has no way to silence
 * that one warning, so pom.xml compiles this file alone, before the others
 * and without -Werror; the rest of the hook is compiled with -Werror and
 * cannot name Unsafe. Called through method handles instead, each call
 * would inline a chain of the JDK's lambda forms into the walker's compiled
 * code (docs/smtt.md).
 */
final class RawAccess {
    private RawAccess() {}

    private static final sun.misc.Unsafe U;

    static {
        try {
            Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            U = (sun.misc.Unsafe) f.get(null);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    static int getInt(Object o, long offset) {
        return U.getInt(o, offset);
    }

    static long getLong(Object o, long offset) {
        return U.getLong(o, offset);
    }

    static Object getObject(Object o, long offset) {
        return U.getObject(o, offset);
    }

    static int arrayBaseOffset(Class<?> arrayClass) {
        return U.arrayBaseOffset(arrayClass);
    }

    static int arrayIndexScale(Class<?> arrayClass) {
        return U.arrayIndexScale(arrayClass);
    }

    /** Throws for fields Unsafe will not locate (those of hidden classes and records). */
    static long objectFieldOffset(Field f) {
        return U.objectFieldOffset(f);
    }

    /** Native memory of n bytes, zeroed; the caller frees it with {@link #freeMemory}. */
    static long allocateZeroed(long n) {
        long a = U.allocateMemory(n);
        U.setMemory(a, n, (byte) 0);
        return a;
    }

    static void freeMemory(long address) {
        U.freeMemory(address);
    }

    /** The long at a native address {@link #allocateZeroed} returned (plus an offset within it). */
    static long getLong(long address) {
        return U.getLong(address);
    }

    static void putLong(long address, long value) {
        U.putLong(address, value);
    }

    static int pageSize() {
        return U.pageSize();
    }
}
