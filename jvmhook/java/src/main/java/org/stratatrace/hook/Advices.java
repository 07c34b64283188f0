package org.stratatrace.hook;

import net.bytebuddy.asm.Advice;

/**
 * The advice Byte Buddy inlines into Spark's methods (see Agent for which
 * method gets which). Each only hands its arguments to {@link Blocks};
 * suppress = Throwable keeps any failure of the hook out of Spark.
 */
final class Advices {
    private Advices() {}

    /** MemoryStore.putBytes / putIteratorAsValues / putIteratorAsBytes, on normal return. */
    static final class Put {
        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.This Object store, @Advice.Argument(0) Object blockId) {
            Blocks.put(store, blockId);
        }
    }

    /** MemoryStore.getBytes / getValues, on normal return. */
    static final class Read {
        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.Argument(0) Object blockId) {
            Blocks.read(blockId);
        }
    }

    /** MemoryStore.remove, before the entry is disposed. */
    static final class Remove {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.Argument(0) Object blockId) {
            Blocks.remove(blockId);
        }
    }

    /** MemoryStore.evictBlocksToFreeSpace: removes inside it are evictions. */
    static final class Evict {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter() {
            Blocks.evictEnter();
        }

        @Advice.OnMethodExit(suppress = Throwable.class, onThrowable = Throwable.class)
        static void exit() {
            Blocks.evictExit();
        }
    }

    /** MemoryStore.clear. */
    static final class Clear {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter() {
            Blocks.clear();
        }
    }

    /** TaskMemoryManager.allocatePage (and 4.x's allocatePageInternal), on normal return. */
    static final class Allocate {
        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.This Object tmm, @Advice.Return Object page) {
            Blocks.allocated(tmm, page);
        }
    }

    /** TaskMemoryManager.freePage, before the page is released. */
    static final class FreePage {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.Argument(0) Object page) {
            Blocks.freePage(page);
        }
    }

    /** TaskMemoryManager.cleanUpAllAllocatedMemory, before it frees what is left. */
    static final class Cleanup {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.This Object tmm) {
            Blocks.cleanup(tmm);
        }
    }

    /** RDD.iterator: the first RDD a task asks for is the one it computes. */
    static final class RddIterator {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.This Object rdd) {
            Blocks.rddIterator(rdd);
        }
    }
}
