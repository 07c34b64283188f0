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
    static final int CACHED_COLUMN = 5; // a column of a cached DataFrame block: ref is its Object[] of batches

    /**
     * Starts the hook thread; 0 or a negative errno. walkMode is HELLO's
     * (enum strata_walk_mode), or 0 when the walker decides it later
     * ({@link #walkMode}); the hook connects only once it is known.
     */
    static native int start(String socket, int reconnectMs, int byteArrayBase, int longArrayBase, int refSize,
            int walkMode);

    /** HELLO's walk mode, decided (enum strata_walk_mode). */
    static native void walkMode(int mode);

    /** Sets HELLO's ids; the hook connects once it has them. */
    static native void identify(String appId, String executorId);

    /**
     * Registers one range and returns its hook id, 0 when its address could
     * not be had. For HEAP_ARRAY/OBJECT_ARRAY/DIRECT {@code offset} counts
     * bytes from the data start of {@code ref}; for ADDRESS it is the address;
     * for CACHED_COLUMN the library finds the range and the column's buffers
     * ({@link #columnBuffers}): offset and length are not used.
     */
    static native long register(int source, Object ref, long offset, long length, int rdd, int partition,
            int mode, int location, int kind, int flags, int chunk, int chunks, int stage, int stageAttempt,
            long taskAttempt, int column, long sparkBytes, String name, String label);

    static native void free(long id, int reason);

    static native void access(long id, long offset, long length, int kind);

    /** Current first byte of a live block, 0 when not live. */
    static native long address(long id);

    /** Data start of a primitive array now (GetPrimitiveArrayCritical). */
    static native long arrayAddress(Object primitiveArray);

    /** GCs the hook has seen finish: the epoch of WALK, GC and CHECKED frames. */
    static native int gcEpoch();

    /** JVMTI GetObjectSize: the bytes o takes in the heap; 0 on error. */
    static native long objectSize(Object o);

    /**
     * Sends a walk of an object-graph block (WALK frames of at most
     * STRATA_WALK_EXTENTS_MAX extents each) and keeps it as the block's
     * latest; extents holds n {vaddr, length} pairs, ascending and disjoint
     * (null and 0 for STALE). Returns the walk's seq, 0 when not sent.
     */
    static native int walk(long id, int gcEpoch, int state, long objects, long bytes, long sharedObjects,
            long sharedBytes, long opaqueObjects, long[] extents, int n);

    /**
     * Raises the calling thread's nice value to nice (Linux keeps it per
     * thread); a higher one stays. 0 or a negative errno.
     */
    static native int lowerPriority(int nice);

    /**
     * The GC epoch the hook thread's latest rescan after collections ran
     * for: the GC frame, MOVEs and column walks of every epoch up to it are
     * queued.
     */
    static native int rescannedEpoch();

    /** Sends CHECKED: every walk not marked STALE since holds at gcEpoch. */
    static native void checked(int gcEpoch);

    /**
     * Marks the calling thread as filling the block of key (a MemoryStore
     * put begins; key is {@link Blocks#fillKey}): the node agent's uprobe on
     * this native is the mark, which makes the kernel count the thread's
     * page faults for the block until the matching {@link #fillEnd}. Calls
     * nest as puts do.
     */
    static native void fillBegin(long key);

    /** Ends the calling thread's innermost fill; stored is 1 when the put stored its block. */
    static native void fillEnd(int stored);

    /** sent, dropped, live, gcEpoch, connects, moves, collected, fills begun, fills stored. */
    static native long[] stats();

    /** Sends a DROPPED report now. */
    static native void report();

    /** Called from native code: the first element's address of an Object[]. */
    static long objectAddress(Object array) {
        return ObjectAddress.dataStart(array);
    }

    /**
     * Called from native code (a registering thread, the hook thread after a
     * collection): the buffers of a cached DataFrame column,
     * {@link CachedBatches#buffers}; null on failure (counted, said once).
     */
    static long[] columnBuffers(Object[] batches, int column, long[] reuse) {
        try {
            return CachedBatches.buffers(batches, column, reuse);
        } catch (Throwable t) {
            Blocks.fail("cached batch buffers", t);
            return null;
        }
    }

    /** Called from native code (the hook thread) after a rescan's GC frame. */
    static void walkWake() {
        Walker.wake();
    }
}
