package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.apache.spark.sql.execution.columnar.DefaultCachedBatch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A cached DataFrame column's buffers as {@link CachedBatches#buffers}
 * finds them for the native registry, in a JVM that runs libstratahook.so
 * (make passes it as -Dstrata.lib; without it the tests skip and say so):
 * every address against the JVM's own (JNI GetPrimitiveArrayCritical),
 * every length, in batch order, and the buffers a column leaves out.
 */
class CachedBatchesTest {
    @BeforeAll
    static void load() {
        TestLib.load();
    }

    private static byte[] filled(int n, int v) {
        byte[] b = new byte[n];
        java.util.Arrays.fill(b, (byte) v);
        return b;
    }

    /**
     * {n, address, length, ...} of the buffers, as the JVM gives them; to
     * compare with buffers' answer, read when no collection ran between.
     */
    private static long[] want(byte[]... bufs) {
        long[] out = new long[1 + 2 * bufs.length];
        out[0] = bufs.length;
        for (int i = 0; i < bufs.length; i++) {
            out[1 + 2 * i] = Native.arrayAddress(bufs[i]);
            out[2 + 2 * i] = bufs[i].length;
        }
        return out;
    }

    /** Asserts buffers' answer for a column, taken with no collection between it and the JVM's. */
    private static void assertColumn(Object[] batches, int column, byte[]... bufs) throws Throwable {
        for (int i = 0; i < 10; i++) {
            int e = Native.gcEpoch();
            long[] got = CachedBatches.buffers(batches, column, null);
            long[] want = want(bufs);
            if (Native.gcEpoch() == e) {
                assertArrayEquals(want, java.util.Arrays.copyOf(got, want.length), "column " + column);
                return;
            }
        }
        throw new AssertionError("a collection overlapped every read");
    }

    @Test
    void everyBatchsBufferOfTheColumn() throws Throwable {
        int n = 300;
        Object[] batches = new Object[n];
        byte[][] ids = new byte[n][], names = new byte[n][];
        for (int i = 0; i < n; i++) {
            ids[i] = filled(400 + i, i);
            names[i] = filled(7 * i + 1, -i);
            batches[i] = new DefaultCachedBatch(ids[i], names[i]);
        }
        assertColumn(batches, 0, ids);
        assertColumn(batches, 1, names);
        assertEquals(0, CachedBatches.leftOut(batches, CachedBatches.DEFAULT_BATCH, 2));
    }

    @Test
    void buffersLeftOut() throws Throwable {
        byte[] a0 = filled(64, 1), b0 = filled(96, 2), b2 = filled(8, 3), a3 = filled(1, 4), b3 = filled(4096, 5);
        Object[] batches = {
            new DefaultCachedBatch(a0, b0),
            new DefaultCachedBatch(filled(10, 6), filled(10, 7), filled(10, 8)), // three columns, not two
            new DefaultCachedBatch(null, b2),
            new DefaultCachedBatch(new byte[0], b3),
            new DefaultCachedBatch(a3, b3), // one buffer in two batches: each batch's
        };
        assertColumn(batches, 0, a0, a3);
        assertColumn(batches, 1, b0, b2, b3, b3);
        assertEquals(5, CachedBatches.leftOut(batches, CachedBatches.DEFAULT_BATCH, 2));
    }

    @Test
    void answersInTheArrayGivenWhenItIsLongEnough() throws Throwable {
        Object[] batches = {new DefaultCachedBatch(filled(16, 1)), new DefaultCachedBatch(filled(32, 2))};
        long[] room = new long[5], small = new long[4];
        assertSame(room, CachedBatches.buffers(batches, 0, room));
        assertEquals(2, room[0]);
        long[] got = CachedBatches.buffers(batches, 0, small);
        assertNotSame(small, got);
        assertEquals(2, got[0]);
        assertEquals(null, CachedBatches.buffers(batches, -1, null), "Arrow's column of default batches");
    }
}
