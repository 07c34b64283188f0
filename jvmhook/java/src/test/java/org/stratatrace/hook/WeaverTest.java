package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

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

        public static void fillBegin(Object store, Object id) { LOG.add("fillBegin " + name(store) + " " + id); }
        public static void put(Object store, Object id) { LOG.add("put " + name(store) + " " + id); }
        public static void put() { LOG.add("put threw"); }
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
            if (size == -2) {
                throw new IllegalStateException("no room");
            }
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

        /**
         * Every kind of argument, twice over: the new method's loads put its
         * handler past offset 63 (the extended stack map frame).
         */
        public double evictBlocksToFreeSpace(int a, long b, float c, double d, boolean e, byte f, char g, short h,
                Object i, int[] j, long[][] k, String l, int a2, long b2, float c2, double d2, boolean e2, byte f2,
                char g2, short h2, Object i2, int[] j2, long[][] k2, String l2, double last) {
            if (last < 0) {
                throw new IllegalStateException("negative");
            }
            return a + b + c + d + (e ? 1 : 0) + f + g + h + j[0] + k[0][0] + l.length()
                    + a2 + b2 + c2 + d2 + (e2 ? 1 : 0) + f2 + g2 + h2 + j2[0] + k2[0][0] + l2.length() + last
                    + (i == i2 ? 1 : 0);
        }

        /** Synchronized: the renamed method holds the monitor, as the original did. */
        public synchronized Object putIteratorAsBytes(Object id, int[] values) {
            return Thread.holdsLock(this) ? "locked " + values.length : "not locked";
        }

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
            new Weaver.Site("putBytes", -1, "fillBegin", "put", Weaver.Pass.THIS_ARG0, true),
            new Weaver.Site("putIteratorAsValues", -1, "fillBegin", "put", Weaver.Pass.THIS_ARG0, true),
            new Weaver.Site("putIteratorAsBytes", -1, "fillBegin", "put", Weaver.Pass.THIS_ARG0, true),
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
        byte[] original = classFile(SUBJECT);
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

    /** A class file from the test's class path (the JDK's included), by internal name. */
    private static byte[] classFile(String internalName) throws IOException {
        try (InputStream in = WeaverTest.class.getResourceAsStream("/" + internalName + ".class")) {
            return in.readAllBytes();
        }
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
        assertCalls("fillBegin Subject a", "put Subject a");
        assertNull(call("putBytes", t, "b", 0L));
        assertCalls("fillBegin Subject b", "put Subject b");
        assertEquals("stored", call("putBytes", t, "c", 5L));
        assertCalls("fillBegin Subject c", "put Subject c");
        assertEquals(14L, call("putIteratorAsValues", t, "d", 7L));
        assertCalls("fillBegin Subject d", "put Subject d");
    }

    @Test
    void putEndsWhenItThrows() throws Throwable {
        Class<?>[] t = {Object.class, long.class};
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> call("putBytes", t, "f", -2L));
        assertEquals("no room", e.getMessage());
        assertCalls("fillBegin Subject f", "put threw");
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
    void everyArgumentKind() throws Throwable {
        Class<?>[] t = {int.class, long.class, float.class, double.class, boolean.class, byte.class, char.class,
                short.class, Object.class, int[].class, long[][].class, String.class, int.class, long.class,
                float.class, double.class, boolean.class, byte.class, char.class, short.class, Object.class,
                int[].class, long[][].class, String.class, double.class};
        Object same = new Object();
        Object[] args = {1, 2L, 3f, 4d, true, (byte) 5, (char) 6, (short) 7, same, new int[] {8}, new long[][] {{9}},
                "ab", 10, 11L, 12f, 13d, false, (byte) 14, (char) 15, (short) 16, same, new int[] {17},
                new long[][] {{18}}, "cde", 0.5};
        assertEquals(1 + 2 + 3 + 4 + 1 + 5 + 6 + 7 + 8 + 9 + 2 + 10 + 11 + 12 + 13 + 14 + 15 + 16 + 17 + 18 + 3 + 0.5
                + 1, (double) call("evictBlocksToFreeSpace", t, args));
        assertCalls("evictEnter", "evictExit");
        args[24] = -1.0;
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> call("evictBlocksToFreeSpace", t, args));
        assertEquals("negative", e.getMessage());
        assertCalls("evictEnter", "evictExit");
    }

    @Test
    void synchronizedMethod() throws Throwable {
        assertEquals("locked 3", call("putIteratorAsBytes", new Class<?>[] {Object.class, int[].class}, "s",
                new int[3]));
        assertCalls("fillBegin Subject s", "put Subject s");
    }

    @Test
    void renamedMethodIsPrivate() throws Exception {
        Method renamed = woven.getDeclaredMethod("strata$getBytes", Object.class);
        assertTrue(Modifier.isPrivate(renamed.getModifiers()) && renamed.isSynthetic(), renamed.toString());
        Method wrapper = woven.getDeclaredMethod("getBytes", Object.class);
        assertTrue(Modifier.isPublic(wrapper.getModifiers()) && !wrapper.isSynthetic(), wrapper.toString());
    }

    @Test
    void wovenOnce() throws IOException {
        byte[] original = classFile(SUBJECT);
        byte[] once = Weaver.weave(original, SITES, CALLS);
        assertNull(Weaver.weave(once, SITES, CALLS), "a class woven already is left alone");
    }

    /** An interface whose default method has a woven shape. */
    public interface Defaulted {
        default void remove(Object id) {}
    }

    @Test
    void interfaceLeftAlone() throws IOException {
        // Its calls would need InterfaceMethodrefs: interfaces are never woven.
        assertNull(Weaver.weave(classFile("org/stratatrace/hook/WeaverTest$Defaulted"), SITES, CALLS));
    }

    /**
     * Malformed class files: every truncation of the subject, and 20,000
     * copies with a few random bytes changed (fixed seed). Each is either
     * refused with IllegalArgumentException or woven into something; no
     * other exception, and never a hang.
     */
    @Test
    void malformedClassFiles() throws IOException {
        byte[] original = classFile(SUBJECT);
        int refused = 0;
        for (int n = 0; n < original.length; n++) {
            byte[] cut = Arrays.copyOf(original, n);
            assertThrows(IllegalArgumentException.class, () -> Weaver.weave(cut, SITES, CALLS), "cut at " + n);
            refused++;
        }
        Random rnd = new Random(7);
        for (int k = 0; k < 20000; k++) {
            byte[] b = original.clone();
            for (int flips = 1 + rnd.nextInt(4); flips > 0; flips--) {
                b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
            }
            try {
                Weaver.weave(b, SITES, CALLS);
            } catch (IllegalArgumentException e) {
                refused++;
            }
        }
        assertTrue(refused > original.length, "no mutated copy was refused");
    }

    @Test
    void otherShapesLeftAlone() throws Throwable {
        assertSame("v", woven.getMethod("getValues", Object.class).invoke(null, "v"));
        assertEquals(3L, call("remove", new Class<?>[] {long.class}, 3L));
        assertCalls();
    }

    @Test
    void nothingToWeave() throws IOException {
        byte[] original = classFile(CALLS);
        assertNull(Weaver.weave(original, SITES, CALLS));
        assertNull(Weaver.weave("org/example/Other", original));
    }
}
