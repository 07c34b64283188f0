package org.stratatrace.hook;

/**
 * The natives of libstratahook.so (jvmhook/native/hook.c). Every call is
 * non-blocking: a frame the socket cannot take is dropped and counted.
 */
final class Native {
    private Native() {}

    // enum reg_source (jvmhook/native/registry.h)
    static final int HEAP_ARRAY = 1;   // primitive array: address asked of the JVM
    static final int OBJECT_ARRAY = 2; // Object[]: address from objectAddress
    static final int DIRECT = 3;       // direct ByteBuffer
    static final int ADDRESS = 4;      // raw off-heap address

    /** Starts the hook thread; 0 or a negative errno. */
    static native int start(String socket, int reconnectMs, int byteArrayBase, int longArrayBase, int refSize);

    /** Sets HELLO's ids; the hook connects once it has them. */
    static native void identify(String appId, String executorId);

    /**
     * Registers one range and returns its hook id, 0 when its address could
     * not be had. For HEAP_ARRAY/OBJECT_ARRAY/DIRECT {@code offset} counts
     * bytes from the data start of {@code ref}; for ADDRESS it is the address.
     */
    static native long register(int source, Object ref, long offset, long length, int rdd, int partition,
            int mode, int location, int kind, int flags, int chunk, int chunks, int stage, int stageAttempt,
            long taskAttempt, String name);

    static native void free(long id, int reason);

    static native void access(long id, long offset, long length, int kind);

    /** Current first byte of a live block, 0 when not live. */
    static native long address(long id);

    /** Data start of a primitive array now (GetPrimitiveArrayCritical). */
    static native long arrayAddress(Object primitiveArray);

    /** sent, dropped, live, gcEpoch, connects, moves, collected. */
    static native long[] stats();

    /** Sends a DROPPED report now. */
    static native void report();

    /** Called from native code: the first element's address of an Object[]. */
    static long objectAddress(Object array) {
        return ObjectAddress.dataStart(array);
    }
}
