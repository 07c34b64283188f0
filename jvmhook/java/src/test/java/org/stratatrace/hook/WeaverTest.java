package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The weaver on a class compiled here, defined in its own loader after
 * weaving (so the JVM's verifier checks the woven code), its calls going to
 * {@link Calls} instead of Blocks. Spark's own classes are woven and run by
 * test/spark's real Spark jobs.
 */
class WeaverTest {
    /** Stands where Blocks does: records every call. */
    public static final class Calls {
        static final List<String> LOG = new ArrayList<>();

        public static void put(Object store, Object id) { LOG.add("put " + name(store) + " " + id); }
        public static void read(Object id) { LOG.add("read " + id); }
        public static void remove(Object id) { LOG.add("remove " + id); }
        public static void evictEnter() { LOG.add("evictEnter"); }
        public static void evictExit() { LOG.add("evictExit"); }
        public static void allocated(Object tmm, Object page) { LOG.add("allocated " + name(tmm) + " " + page); }
        public static void cleanup(Object tmm) { LOG.add("cleanup " + name(tmm)); }

        private static String name(Object o) {
            if (o == null) {
                return "null";
            }
            String n = o.getClass().getName(); // not getSimpleName: the woven class has another loader than its host
            return n.substring(n.lastIndexOf('$') + 1);
        }
    }

    /** The class woven: the shapes of Spark's methods, and some that must be left alone. */
    public static class Subject {
        public Object putBytes(Object id, long size) {
            if (size < 0) {
                return "negative";
            }
            if (size == 0) {
                return null;
            }
            return "stored";
        }

        public long putIteratorAsValues(Object id, long size) {
            return size * 2; // a long return: the put call must leave it in place
        }

        public Object getBytes(Object id) {
            if (id == null) {
                throw new IllegalStateException("no id");
            }
            return "bytes of " + id;
        }

        public void remove(Object id) {}

        public long evictBlocksToFreeSpace(Object id, long space, Object mode) {
            long freed = 0;
            try {
                if (space == 1) {
                    throw new IllegalArgumentException("caught inside");
                }
                freed = space;
            } catch (IllegalArgumentException e) {
                freed = -1; // the method's own handler still comes first
            }
            if (space == 2) {
                throw new UnsupportedOperationException("thrown out");
            }
            for (int i = 0; i < 3; i++) {
                freed++;
            }
            return freed;
        }

        public Object allocatePage(long size) {
            return size == 0 ? null : "page" + size;
        }

        public void cleanUpAllAllocatedMemory() {}

        /** Static: never woven. */
        public static Object getValues(Object id) {
            return id;
        }

        /** A primitive first argument: read(arg0) cannot be passed, left alone. */
        public Object remove(long id) {
            return id;
        }
    }

    private static final String SUBJECT = "org/stratatrace/hook/WeaverTest$Subject";
    private static final String CALLS = "org/stratatrace/hook/WeaverTest$Calls";
    private static final List<Weaver.Site> SITES = List.of(
            new Weaver.Site("putBytes", -1, null, "put", Weaver.Pass.THIS_ARG0, false),
            new Weaver.Site("putIteratorAsValues", -1, null, "put", Weaver.Pass.THIS_ARG0, false),
            new Weaver.Site("getBytes", 1, null, "read", Weaver.Pass.ARG0, false),
            new Weaver.Site("getValues", 1, null, "read", Weaver.Pass.ARG0, false),
            new Weaver.Site("remove", 1, "remove", null, Weaver.Pass.ARG0, false),
            new Weaver.Site("evictBlocksToFreeSpace", -1, "evictEnter", "evictExit", Weaver.Pass.NOTHING, true),
            new Weaver.Site("allocatePage", -1, null, "allocated", Weaver.Pass.THIS_RETURNED, false),
            new Weaver.Site("cleanUpAllAllocatedMemory", 0, "cleanup", null, Weaver.Pass.THIS, false));

    private Object subject;
    private Class<?> woven;

    @BeforeEach
    void weave() throws Exception {
        byte[] original;
        try (InputStream in = WeaverTest.class.getResourceAsStream("/" + SUBJECT + ".class")) {
            original = in.readAllBytes();
        }
        byte[] b = Weaver.weave(original, SITES, CALLS);
        woven = new ClassLoader(WeaverTest.class.getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (name.equals(SUBJECT.replace('/', '.'))) {
                    synchronized (this) {
                        Class<?> c = findLoadedClass(name);
                        return c != null ? c : defineClass(name, b, 0, b.length);
                    }
                }
                return super.loadClass(name, resolve);
            }
        }.loadClass(SUBJECT.replace('/', '.'));
        subject = woven.getConstructor().newInstance();
        Calls.LOG.clear();
    }

    private Object call(String name, Class<?>[] types, Object... args) throws Throwable {
        Method m = woven.getMethod(name, types);
        try {
            return m.invoke(subject, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static void assertCalls(String... want) {
        assertArrayEquals(want, Calls.LOG.toArray(new String[0]), "calls: " + Calls.LOG);
        Calls.LOG.clear();
    }

    @Test
    void exitOnEveryReturn() throws Throwable {
        Class<?>[] t = {Object.class, long.class};
        assertEquals("negative", call("putBytes", t, "a", -1L));
        assertCalls("put Subject a");
        assertNull(call("putBytes", t, "b", 0L));
        assertCalls("put Subject b");
        assertEquals("stored", call("putBytes", t, "c", 5L));
        assertCalls("put Subject c");
        assertEquals(14L, call("putIteratorAsValues", t, "d", 7L));
        assertCalls("put Subject d");
    }

    @Test
    void exitNotOnThrow() throws Throwable {
        Class<?>[] t = {Object.class};
        assertEquals("bytes of x", call("getBytes", t, "x"));
        assertCalls("read x");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> call("getBytes", t, (Object) null));
        assertEquals("no id", e.getMessage());
        assertCalls();
    }

    @Test
    void enter() throws Throwable {
        call("remove", new Class<?>[] {Object.class}, "r");
        assertCalls("remove r");
        call("cleanUpAllAllocatedMemory", new Class<?>[0]);
        assertCalls("cleanup Subject");
    }

    @Test
    void exitOnReturnAndThrow() throws Throwable {
        Class<?>[] t = {Object.class, long.class, Object.class};
        assertEquals(13L, call("evictBlocksToFreeSpace", t, "e", 10L, null));
        assertCalls("evictEnter", "evictExit");
        assertEquals(2L, call("evictBlocksToFreeSpace", t, "e", 1L, null), "the method's own catch");
        assertCalls("evictEnter", "evictExit");
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> call("evictBlocksToFreeSpace", t, "e", 2L, null));
        assertEquals("thrown out", e.getMessage());
        assertCalls("evictEnter", "evictExit");
    }

    @Test
    void returnedValue() throws Throwable {
        Class<?>[] t = {long.class};
        assertEquals("page4096", call("allocatePage", t, 4096L));
        assertCalls("allocated Subject page4096");
        assertNull(call("allocatePage", t, 0L));
        assertCalls("allocated Subject null");
    }

    @Test
    void otherShapesLeftAlone() throws Throwable {
        assertSame("v", woven.getMethod("getValues", Object.class).invoke(null, "v"));
        assertEquals(3L, call("remove", new Class<?>[] {long.class}, 3L));
        assertCalls();
    }

    @Test
    void nothingToWeave() throws IOException {
        byte[] original;
        try (InputStream in = WeaverTest.class.getResourceAsStream("/org/stratatrace/hook/WeaverTest$Calls.class")) {
            original = in.readAllBytes();
        }
        assertNull(Weaver.weave(original, SITES, CALLS));
        assertNull(Weaver.weave("org/example/Other", original));
    }
}
