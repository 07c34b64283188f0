package org.stratatrace.hook;

/**
 * Constants of the hook wire format, as the Java side passes them to the
 * native library. The specification is jvmhook/include/strata_hook.h; the
 * real-Spark tests (test/spark) run {@link #main} and compare every line
 * with what the C compiler says about that header, so these cannot drift.
 */
public final class Wire {
    private Wire() {}

    // enum strata_memory_mode
    static final int MODE_STORAGE = 1;
    static final int MODE_EXECUTION = 2;
    // enum strata_memory_location
    static final int LOCATION_ON_HEAP = 1;
    static final int LOCATION_OFF_HEAP = 2;
    // enum strata_access_kind
    static final int ACCESS_READ = 2;
    static final int ACCESS_WRITE = 3;
    // enum strata_block_kind
    static final int KIND_RDD = 1;
    static final int KIND_BROADCAST = 2;
    static final int KIND_SHUFFLE = 3;
    static final int KIND_TASK_RESULT = 4;
    static final int KIND_STREAM = 5;
    static final int KIND_TUNGSTEN_PAGE = 6;
    static final int KIND_OTHER = 7;
    // REGISTER flags
    static final int BLOCK_OBJECT_GRAPH = 0x01;
    static final int BLOCK_CACHED_BATCH = 0x02;
    // enum strata_walk_mode
    static final int WALK_ON = 1;
    static final int WALK_OFF = 2;
    static final int WALK_UNSUPPORTED_GC = 3;
    static final int WALK_NO_LAYOUT = 4;
    // enum strata_walk_state
    static final int WALK_DONE = 1;
    static final int WALK_CUT = 2;
    static final int WALK_STALE = 3;
    static final int WALK_EXTENTS_MAX = 248;
    // enum strata_free_reason
    static final int FREE_REMOVED = 1;
    static final int FREE_EVICTED = 2;
    static final int FREE_PAGE_FREED = 3;
    static final int FREE_TASK_END = 4;
    static final int FREE_CLEARED = 5;
    static final int FREE_COLLECTED = 6;
    static final int STR_MAX = 255;
    // enum strata_off_reason (the reasons the Java side finds)
    static final int OFF_OPTIONS = 2;
    static final int OFF_JAVA_START = 5;

    /** Prints "const NAME value" per constant, named as in strata_hook.h. */
    public static void main(String[] args) {
        Object[][] c = {
            {"STRATA_MODE_STORAGE", MODE_STORAGE}, {"STRATA_MODE_EXECUTION", MODE_EXECUTION},
            {"STRATA_LOCATION_ON_HEAP", LOCATION_ON_HEAP}, {"STRATA_LOCATION_OFF_HEAP", LOCATION_OFF_HEAP},
            {"STRATA_ACCESS_READ", ACCESS_READ}, {"STRATA_ACCESS_WRITE", ACCESS_WRITE},
            {"STRATA_KIND_RDD", KIND_RDD}, {"STRATA_KIND_BROADCAST", KIND_BROADCAST},
            {"STRATA_KIND_SHUFFLE", KIND_SHUFFLE}, {"STRATA_KIND_TASK_RESULT", KIND_TASK_RESULT},
            {"STRATA_KIND_STREAM", KIND_STREAM}, {"STRATA_KIND_TUNGSTEN_PAGE", KIND_TUNGSTEN_PAGE},
            {"STRATA_KIND_OTHER", KIND_OTHER}, {"STRATA_BLOCK_OBJECT_GRAPH", BLOCK_OBJECT_GRAPH},
            {"STRATA_BLOCK_CACHED_BATCH", BLOCK_CACHED_BATCH},
            {"STRATA_WALK_ON", WALK_ON}, {"STRATA_WALK_OFF", WALK_OFF},
            {"STRATA_WALK_UNSUPPORTED_GC", WALK_UNSUPPORTED_GC}, {"STRATA_WALK_NO_LAYOUT", WALK_NO_LAYOUT},
            {"STRATA_WALK_DONE", WALK_DONE}, {"STRATA_WALK_CUT", WALK_CUT}, {"STRATA_WALK_STALE", WALK_STALE},
            {"STRATA_WALK_EXTENTS_MAX", WALK_EXTENTS_MAX},
            {"STRATA_FREE_REMOVED", FREE_REMOVED}, {"STRATA_FREE_EVICTED", FREE_EVICTED},
            {"STRATA_FREE_PAGE_FREED", FREE_PAGE_FREED}, {"STRATA_FREE_TASK_END", FREE_TASK_END},
            {"STRATA_FREE_CLEARED", FREE_CLEARED}, {"STRATA_FREE_COLLECTED", FREE_COLLECTED},
            {"STRATA_STR_MAX", STR_MAX},
            {"STRATA_OFF_OPTIONS", OFF_OPTIONS}, {"STRATA_OFF_JAVA_START", OFF_JAVA_START},
        };
        for (Object[] e : c) {
            System.out.println("const " + e[0] + " " + e[1]);
        }
    }
}
