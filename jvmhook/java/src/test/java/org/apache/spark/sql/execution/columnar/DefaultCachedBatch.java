package org.apache.spark.sql.execution.columnar;

/**
 * The shape of Spark SQL's class of this name as the hook reads it (one
 * byte[] per column, {@code buffers()}), for the hook's unit tests, which run
 * without Spark: the hook knows a cached batch by its class's name. The
 * real class is read in test/spark, with real Spark.
 */
public final class DefaultCachedBatch {
    private final byte[][] buffers;

    public DefaultCachedBatch(byte[]... buffers) {
        this.buffers = buffers;
    }

    public byte[][] buffers() {
        return buffers;
    }
}
