package org.stratatrace.hook;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Array;

/**
 * The members of Spark the hook reads, looked up by name once per class
 * loader (the loader of the first instrumented Spark object) and cached as
 * method handles typed with Object, so the agent compiles with no Spark on its
 * class path and one jar serves Spark 3.5 and 4. The names and types are those
 * of Spark 3.5.x and 4.x (jvmhook/README.md lists them); a missing member
 * fails the lookup with its name, and the hook then stays off.
 */
final class Spark {
    final ClassLoader loader;
    // org.apache.spark.storage.memory
    final MethodHandle entries;          // MemoryStore.entries(): LinkedHashMap<BlockId, MemoryEntry>
    final Class<?> serializedEntry;      // SerializedMemoryEntry
    final Class<?> deserializedEntry;    // DeserializedMemoryEntry
    final MethodHandle serializedBuffer; // SerializedMemoryEntry.buffer(): ChunkedByteBuffer
    final MethodHandle deserializedValue; // DeserializedMemoryEntry.value(): Array[T]
    final MethodHandle chunks;           // ChunkedByteBuffer.chunks(): ByteBuffer[]
    final MethodHandle entrySize;        // MemoryEntry.size(): long
    // org.apache.spark.storage
    final MethodHandle blockName;        // BlockId.name(): String
    final Class<?> rddBlockId;
    final MethodHandle rddBlockRdd;      // RDDBlockId.rddId(): int
    final MethodHandle rddBlockSplit;    // RDDBlockId.splitIndex(): int
    // org.apache.spark
    final MethodHandle taskContextGet;   // static TaskContext.get()
    final MethodHandle stageId;          // TaskContext.stageId(): int
    final MethodHandle stageAttempt;     // TaskContext.stageAttemptNumber(): int
    final MethodHandle partitionId;      // TaskContext.partitionId(): int
    final MethodHandle taskAttemptId;    // TaskContext.taskAttemptId(): long
    final MethodHandle sparkEnvGet;      // static SparkEnv.get()
    final MethodHandle executorId;       // SparkEnv.executorId(): String
    final MethodHandle envConf;          // SparkEnv.conf(): SparkConf
    final MethodHandle confGet;          // SparkConf.get(String, String): String
    final MethodHandle rddId;            // rdd.RDD.id(): int
    final MethodHandle rddStorageLevel;  // rdd.RDD.storageLevel (the field: GraphX overrides getStorageLevel)
    final MethodHandle levelUseMemory;   // storage.StorageLevel.useMemory(): boolean
    final MethodHandle levelDeserialized; // storage.StorageLevel.deserialized(): boolean
    // org.apache.spark.memory and org.apache.spark.unsafe.memory
    final MethodHandle tmmTaskAttempt;   // TaskMemoryManager.taskAttemptId (private long field)
    final MethodHandle pageTable;        // TaskMemoryManager.pageTable (private MemoryBlock[] field)
    final MethodHandle pageObject;       // MemoryLocation.getBaseObject(): Object (long[] or null)
    final MethodHandle pageOffset;       // MemoryLocation.getBaseOffset(): long
    final MethodHandle pageSize;         // MemoryBlock.size(): long
    final MethodHandle pageNumber;       // MemoryBlock.pageNumber (public int field)

    private static volatile Spark cached;

    /** The handles for the loader of o's class, looked up on first use. */
    static Spark of(Object o) {
        Spark s = cached;
        ClassLoader l = o.getClass().getClassLoader();
        if (s != null && s.loader == l) {
            return s;
        }
        synchronized (Spark.class) {
            if (cached == null || cached.loader != l) {
                try {
                    cached = new Spark(l);
                } catch (RuntimeException | LinkageError e) {
                    Blocks.enabled = false; // a Spark this hook does not know: stay out of its way
                    System.err.println("strata-hook: off: " + e);
                    throw e;
                }
            }
            return cached;
        }
    }

    /**
     * Looks up the handles for loader (the loader Spark's classes come
     * from, when the hook can tell ahead) on the calling thread and links
     * each of them once, so that the first Spark threads to use them find
     * them ready: the lookups load about twenty of Spark's classes (loaded,
     * never initialized) and each handle's first call spins its lambda forms,
     * some tens of milliseconds a task thread would otherwise wait for. A
     * failure is left to {@link #of}, which prints it when Spark gets there.
     */
    static void prepare(ClassLoader l) {
        Spark s;
        synchronized (Spark.class) {
            if (cached != null) {
                return;
            }
            try {
                s = new Spark(l);
            } catch (RuntimeException | LinkageError e) {
                return;
            }
            cached = s;
        }
        s.link();
    }

    /**
     * Calls each handle once with a null receiver, at the type its callers
     * use, for the NullPointerException: that links it without running any
     * of Spark's code or initializing its classes. The static ones are left
     * alone for that reason.
     */
    private void link() {
        for (MethodHandle h : new MethodHandle[] {entries, serializedBuffer, deserializedValue, chunks, blockName,
                envConf, executorId, rddStorageLevel, pageTable, pageObject}) {
            try {
                Object o = (Object) h.invokeExact((Object) null);
            } catch (Throwable expected) {
                // NullPointerException
            }
        }
        for (MethodHandle h : new MethodHandle[] {rddBlockRdd, rddBlockSplit, stageId, stageAttempt, partitionId, rddId,
                pageNumber}) {
            try {
                int i = (int) h.invokeExact((Object) null);
            } catch (Throwable expected) {
                // NullPointerException
            }
        }
        for (MethodHandle h : new MethodHandle[] {entrySize, taskAttemptId, tmmTaskAttempt, pageOffset, pageSize}) {
            try {
                long j = (long) h.invokeExact((Object) null);
            } catch (Throwable expected) {
                // NullPointerException
            }
        }
        for (MethodHandle h : new MethodHandle[] {levelUseMemory, levelDeserialized}) {
            try {
                boolean b = (boolean) h.invokeExact((Object) null);
            } catch (Throwable expected) {
                // NullPointerException
            }
        }
        try {
            Object o = (Object) confGet.invokeExact((Object) null, "", (String) null);
        } catch (Throwable expected) {
            // NullPointerException
        }
    }

    private final MethodHandles.Lookup self = MethodHandles.lookup();

    private Spark(ClassLoader l) {
        loader = l;
        Class<?> memoryStore = cls("org.apache.spark.storage.memory.MemoryStore");
        entries = virtual(memoryStore, "entries", java.util.LinkedHashMap.class);
        serializedEntry = cls("org.apache.spark.storage.memory.SerializedMemoryEntry");
        deserializedEntry = cls("org.apache.spark.storage.memory.DeserializedMemoryEntry");
        Class<?> cbb = cls("org.apache.spark.util.io.ChunkedByteBuffer");
        serializedBuffer = virtual(serializedEntry, "buffer", cbb);
        deserializedValue = virtual(deserializedEntry, "value", Object.class);
        chunks = virtual(cbb, "chunks", java.nio.ByteBuffer[].class);
        entrySize = virtual(cls("org.apache.spark.storage.memory.MemoryEntry"), "size", long.class);
        blockName = virtual(cls("org.apache.spark.storage.BlockId"), "name", String.class);
        rddBlockId = cls("org.apache.spark.storage.RDDBlockId");
        rddBlockRdd = virtual(rddBlockId, "rddId", int.class);
        rddBlockSplit = virtual(rddBlockId, "splitIndex", int.class);
        Class<?> tc = cls("org.apache.spark.TaskContext");
        taskContextGet = stat(tc, "get", tc);
        stageId = virtual(tc, "stageId", int.class);
        stageAttempt = virtual(tc, "stageAttemptNumber", int.class);
        partitionId = virtual(tc, "partitionId", int.class);
        taskAttemptId = virtual(tc, "taskAttemptId", long.class);
        Class<?> env = cls("org.apache.spark.SparkEnv");
        Class<?> conf = cls("org.apache.spark.SparkConf");
        sparkEnvGet = stat(env, "get", env);
        executorId = virtual(env, "executorId", String.class);
        envConf = virtual(env, "conf", conf);
        try {
            confGet = self.findVirtual(conf, "get", MethodType.methodType(String.class, String.class, String.class))
                    .asType(MethodType.methodType(Object.class, Object.class, String.class, String.class));
        } catch (ReflectiveOperationException e) {
            throw missing("SparkConf.get(String, String)", e);
        }
        Class<?> rdd = cls("org.apache.spark.rdd.RDD");
        Class<?> level = cls("org.apache.spark.storage.StorageLevel");
        rddId = virtual(rdd, "id", int.class);
        rddStorageLevel = field(rdd, "storageLevel", level, Object.class);
        levelUseMemory = virtual(level, "useMemory", boolean.class);
        levelDeserialized = virtual(level, "deserialized", boolean.class);
        Class<?> tmm = cls("org.apache.spark.memory.TaskMemoryManager");
        Class<?> location = cls("org.apache.spark.unsafe.memory.MemoryLocation");
        Class<?> block = cls("org.apache.spark.unsafe.memory.MemoryBlock");
        tmmTaskAttempt = field(tmm, "taskAttemptId", long.class, long.class);
        pageTable = field(tmm, "pageTable", Array.newInstance(block, 0).getClass(), Object.class);
        pageObject = virtual(location, "getBaseObject", Object.class);
        pageOffset = virtual(location, "getBaseOffset", long.class);
        pageSize = virtual(block, "size", long.class);
        pageNumber = field(block, "pageNumber", int.class, int.class);
    }

    private Class<?> cls(String name) {
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException e) {
            throw missing(name, e);
        }
    }

    private static IllegalStateException missing(String what, Throwable cause) {
        return new IllegalStateException("Spark member not found: " + what + " (" + cause + ")", cause);
    }

    private MethodHandles.Lookup in(Class<?> c) throws IllegalAccessException {
        return MethodHandles.privateLookupIn(c, self);
    }

    /**
     * A no-argument instance method returning ret, typed (Object)ret for
     * primitives and (Object)Object otherwise. Looked up by name and exact
     * type, never through Class.getDeclaredMethods, which would load every
     * type any method of the class mentions (Spark 4 mentions classes that
     * are not on an executor's class path).
     */
    private MethodHandle virtual(Class<?> c, String name, Class<?> ret) {
        try {
            MethodHandle h = in(c).findVirtual(c, name, MethodType.methodType(ret));
            return h.asType(MethodType.methodType(ret.isPrimitive() ? ret : Object.class, Object.class));
        } catch (ReflectiveOperationException e) {
            throw missing(c.getName() + "." + name + "()", e);
        }
    }

    /** A no-argument static method returning ret, typed ()Object. */
    private MethodHandle stat(Class<?> c, String name, Class<?> ret) {
        try {
            return in(c).findStatic(c, name, MethodType.methodType(ret)).asType(MethodType.methodType(Object.class));
        } catch (ReflectiveOperationException e) {
            throw missing("static " + c.getName() + "." + name + "()", e);
        }
    }

    /** An instance field getter, typed (Object)type (type: the field's, or Object). */
    private MethodHandle field(Class<?> c, String name, Class<?> fieldType, Class<?> type) {
        try {
            return in(c).findGetter(c, name, fieldType).asType(MethodType.methodType(type, Object.class));
        } catch (ReflectiveOperationException e) {
            throw missing(c.getName() + "." + name, e);
        }
    }
}
