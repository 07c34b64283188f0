package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.sun.management.HotSpotDiagnosticMXBean;

/**
 * The walker's walk on object graphs built here, in a JVM that runs
 * libstratahook.so as its agent (make passes it as -Dstrata.lib; without it
 * the tests skip and say so). Object counts are known by construction; byte
 * counts are checked against the JVM's own answer for every object (JVMTI
 * GetObjectSize, arrays included), addresses against the calibrated
 * reference decoding, so a wrong array size or a missed page fails.
 */
class GraphWalkTest {
    private static int align, page;

    @BeforeAll
    static void load() {
        TestLib.load();
        HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        align = Integer.parseInt(hs.getVMOption("ObjectAlignmentInBytes").getValue());
        page = RawAccess.pageSize();
    }

    static final class Node {
        Node next;
        byte[] data;
        int value;

        Node(Node next, byte[] data) {
            this.next = next;
            this.data = data;
        }
    }

    record Rec(byte[] payload) {}

    static final class Holder {
        final Object o;

        Holder(Object o) {
            this.o = o;
        }
    }

    /** One walk, repeated until no collection overlapped it; the caller frees w.pages. */
    private static GraphWalk walk(WalkIndex index, long limit, Object[] root) {
        GraphWalk w = new GraphWalk(new Layout.Table(Layout.jvmStops()), index, limit, page, align, 64 << 10);
        for (int i = 0; i < 10; i++) {
            int e = Native.gcEpoch();
            w.run(root, 0, () -> true);
            if (Native.gcEpoch() == e) {
                return w;
            }
            w.pages.free();
        }
        throw new AssertionError("a collection overlapped every walk");
    }

    private static long size(Object... objs) {
        long n = 0;
        for (Object o : objs) {
            long s = Native.objectSize(o);
            assertTrue(s > 0, "GetObjectSize of " + o.getClass());
            n += s;
        }
        return n;
    }

    private static long address(Object o) {
        return ObjectAddress.address(new Object[] {o});
    }

    /** Every object's bytes lie in the walk's extents, which are page aligned, ascending, disjoint. */
    private static void assertCovered(GraphWalk w, Object... objs) {
        long[] ext = w.pages.extents();
        long end = -1;
        for (int i = 0; i < ext.length; i += 2) {
            assertEquals(0, ext[i] % page, "extent start page aligned");
            assertEquals(0, ext[i + 1] % page, "extent length whole pages");
            assertTrue(ext[i + 1] > 0 && ext[i] > end, "extents ascending, disjoint, not touching");
            end = ext[i] + ext[i + 1];
        }
        for (Object o : objs) {
            long a = address(o), s = Native.objectSize(o);
            boolean in = false;
            for (int i = 0; i < ext.length && !in; i += 2) {
                in = a >= ext[i] && a + s <= ext[i] + ext[i + 1];
            }
            assertTrue(in, o.getClass() + " at " + Long.toHexString(a) + "+" + s + " outside the extents");
            assertTrue(w.pages.marked(a), "object start marked");
        }
    }

    @Test
    void cycleIsWalkedOnce() {
        List<Object> all = new ArrayList<>();
        Node first = new Node(null, new byte[10]);
        Node n = first;
        all.add(first);
        all.add(first.data);
        for (int i = 1; i < 100; i++) {
            n = new Node(n, new byte[10 + i]);
            all.add(n);
            all.add(n.data);
        }
        first.next = n; // a ring
        Object[] root = {n, first, n};
        all.add(root);
        GraphWalk w = walk(new WalkIndex(), Long.MAX_VALUE, root);
        try {
            assertEquals(201, w.objects);
            assertEquals(size(all.toArray()), w.bytes);
            assertFalse(w.cut);
            assertEquals(0, w.sharedObjects);
            assertCovered(w, all.toArray());
        } finally {
            w.pages.free();
        }
    }

    @Test
    void millionCellListNeedsNoRecursion() {
        Node head = null;
        for (int i = 0; i < 1_000_000; i++) {
            head = new Node(head, null);
        }
        Object[] root = {head};
        GraphWalk w = walk(new WalkIndex(), Long.MAX_VALUE, root);
        try {
            assertEquals(1_000_001, w.objects);
            assertEquals(size((Object) root) + 1_000_000 * size(head), w.bytes);
        } finally {
            w.pages.free();
        }
    }

    @Test
    void arraysNullsAndEmptyObjects() {
        int[][] grid = new int[3][4];
        Object plain = new Object();
        Object[] empty = {null, null};
        String s = "strata " + System.nanoTime();
        long[] big = new long[2_000_000]; // 16 MB: kept as a run of pages
        byte[] value = valueOf(s);
        Object[] root = {null, plain, new int[5], grid, empty, s, big, null};
        Object five = root[2];
        GraphWalk w = walk(new WalkIndex(), Long.MAX_VALUE, root);
        try {
            // root, plain, int[5], grid + its 3 rows, empty, the String and its bytes, big
            assertEquals(11, w.objects);
            assertEquals(size(root, plain, five, grid, grid[0], grid[1], grid[2], empty, s, value, big), w.bytes);
            assertCovered(w, root, plain, five, grid, grid[0], grid[1], grid[2], empty, s, value, big);
            assertTrue(w.pages.pages() >= big.length * 8L / page, "the long[]'s pages are the walk's");
        } finally {
            w.pages.free();
        }
    }

    /** The byte[] behind a String (its field "value", read as the walker reads it). */
    private static byte[] valueOf(String s) {
        try {
            return (byte[]) RawAccess.getObject(s, RawAccess.objectFieldOffset(String.class.getDeclaredField("value")));
        } catch (NoSuchFieldException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void stopsAreNeitherCountedNorFollowed() {
        Holder h = new Holder(Thread.currentThread());
        Object[] root = {Thread.currentThread(), String.class, h, new java.lang.ref.WeakReference<>(new byte[100])};
        GraphWalk w = walk(new WalkIndex(), Long.MAX_VALUE, root);
        try {
            assertEquals(2, w.objects); // the array and the holder
            assertEquals(size(root, h), w.bytes);
        } finally {
            w.pages.free();
        }
    }

    @Test
    void opaqueObjectsAreCountedNotFollowed() throws Exception {
        byte[] captured = new byte[1000];
        Runnable lambda = () -> captured[0]++;
        Rec rec = new Rec(new byte[1000]);
        Object broken = brokenInstance();
        assertThrows(NoClassDefFoundError.class, () -> broken.getClass().getDeclaredFields());
        Object[] root = {lambda, rec, broken};
        GraphWalk w = walk(new WalkIndex(), Long.MAX_VALUE, root);
        try {
            assertEquals(4, w.objects);
            assertEquals(3, w.opaqueObjects);
            assertEquals(size(root, lambda, rec, broken), w.bytes);
        } finally {
            w.pages.free();
        }
    }

    /** An instance of Broken whose field's class cannot load (reflection on it throws). */
    private static Object brokenInstance() throws Exception {
        String name = Broken.class.getName();
        byte[] b;
        try (InputStream in = GraphWalkTest.class.getResourceAsStream("/" + name.replace('.', '/') + ".class")) {
            b = in.readAllBytes();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        ClassLoader l = new ClassLoader(null) {
            @Override
            protected Class<?> findClass(String n) throws ClassNotFoundException {
                if (n.equals(name)) {
                    return defineClass(n, b, 0, b.length);
                }
                throw new ClassNotFoundException(n);
            }
        };
        return l.loadClass(name).getDeclaredConstructor().newInstance();
    }

    /** n nodes, each with its own 64-byte array. */
    private static Node[] nodes(int n) {
        Node[] nodes = new Node[n];
        for (int i = 0; i < n; i++) {
            nodes[i] = new Node(null, new byte[64]);
        }
        return nodes;
    }

    @Test
    void sharedObjectsBelongToTheFirstWalk() {
        Node[] nodes = nodes(10);
        Object[] first = nodes.clone();
        Object[] second = nodes.clone();
        WalkIndex index = new WalkIndex();
        GraphWalk a = walk(index, Long.MAX_VALUE, first);
        PageSet held = a.pages;
        index.add(() -> held, held.extents());
        GraphWalk b = walk(index, Long.MAX_VALUE, second);
        try {
            assertEquals(21, a.objects);
            assertEquals(1, b.objects); // its own array only
            assertEquals(size((Object) second), b.bytes);
            assertEquals(10, b.sharedObjects);
            assertEquals(10 * size(nodes[0]), b.sharedBytes);
            assertFalse(b.pages.marked(address(nodes[0])));
        } finally {
            b.pages.free();
            held.free();
        }
    }

    @Test
    void anEarlierBlockTakesOverALaterOnesObjects() {
        Node[] nodes = nodes(10);
        Object[] later = nodes.clone();
        Object[] earlier = nodes.clone();
        WalkIndex index = new WalkIndex();
        PageSet held = walk(index, Long.MAX_VALUE, later).pages; // walked at order 0, held at 7
        WalkIndex.Holder laterHolder = new WalkIndex.Holder() {
            @Override
            public PageSet pages() {
                return held;
            }

            @Override
            public long order() {
                return 7;
            }
        };
        index.add(laterHolder, held.extents());
        GraphWalk b = walk(index, Long.MAX_VALUE, earlier); // order 0: stored before 7
        try {
            assertEquals(21, b.objects); // its array, the nodes and their arrays: its own
            assertEquals(0, b.sharedObjects);
            assertEquals(1, b.overtaken.size());
            assertSame(laterHolder, b.overtaken.get(0));
            assertCovered(b, (Object[]) nodes);
        } finally {
            b.pages.free();
            held.free();
        }
    }

    @Test
    void repeatedReferencesCountOnce() {
        // Another block's walk holds two nodes; this block's array refers
        // to them and to three nodes of its own thousands of times over,
        // as arrays of boxed small numbers do.
        Node[] theirs = {new Node(null, new byte[32]), new Node(null, new byte[32])};
        Node[] mine = {new Node(null, new byte[16]), new Node(null, new byte[16]), new Node(null, new byte[16])};
        mine[1].next = mine[0];
        mine[2].next = theirs[0];
        WalkIndex index = new WalkIndex();
        GraphWalk a = walk(index, Long.MAX_VALUE, theirs.clone());
        PageSet held = a.pages;
        index.add(() -> held, held.extents());
        Object[] root = new Object[12_000];
        for (int i = 0; i < root.length; i++) {
            root[i] = i % 5 < 3 ? mine[i % 5] : theirs[i % 5 - 3];
        }
        GraphWalk b = walk(index, Long.MAX_VALUE, root);
        try {
            assertEquals(7, b.objects); // the array, three nodes and their arrays
            assertEquals(size(root, mine[0], mine[1], mine[2], mine[0].data, mine[1].data, mine[2].data), b.bytes);
            assertEquals(2, b.sharedObjects);
            assertEquals(size(theirs[0], theirs[1]), b.sharedBytes);
            assertCovered(b, root, mine[0], mine[1], mine[2], mine[0].data, mine[1].data, mine[2].data);
        } finally {
            b.pages.free();
            held.free();
        }
    }

    @Test
    void walkIsCutAtItsObjectLimit() {
        Node head = null;
        for (int i = 0; i < 100; i++) {
            head = new Node(head, null);
        }
        GraphWalk w = walk(new WalkIndex(), 10, new Object[] {head});
        try {
            assertTrue(w.cut);
            assertEquals(10, w.objects);
        } finally {
            w.pages.free();
        }
    }

    @Test
    void pageSetMarksAndRuns() {
        PageSet p = new PageSet(page, align);
        try {
            long base = 1L << 40;
            assertTrue(p.markStart(base + 8));
            assertFalse(p.markStart(base + 8));
            assertTrue(p.marked(base + 8));
            assertFalse(p.marked(base));
            assertFalse(p.marked(base + 16));
            p.cover(base + 8, 3L * page); // a neighbour page run: base .. base+3 pages
            for (int i = 0; i < 5000; i++) { // grows the table
                p.markStart(base + (long) (i + 10) * page);
            }
            p.markStart(base + 100_000L * page);
            p.cover(base + 100_000L * page, 40L * page); // a run
            long[] ext = p.extents();
            assertEquals(base, ext[0]);
            assertEquals(4L * page, ext[1]);
            assertEquals(base + 10L * page, ext[2]);
            assertEquals(5000L * page, ext[3]);
            assertEquals(base + 100_000L * page, ext[4]);
            assertEquals(40L * page, ext[5]);
            assertEquals(6, ext.length);
        } finally {
            p.free();
        }
        assertFalse(p.marked(1L << 40), "a freed set holds nothing");
    }
}
