package org.stratatrace.hook;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One walk of the objects reachable from a block's array, depth first with
 * an explicit stack (one entry per object on the current path, with a
 * cursor into its references, so a long linked list or a huge array costs
 * stack entries, never Java stack frames). For each object reached it reads
 * its address from the reference (decoded with the calibrated base and
 * shift), its class's {@link Layout} and size, and then:
 * <ul>
 *   <li>an object this walk met already is skipped (cycles, sharing
 *       within the block, many references to one object), before anything
 *       else is read of it: the one test a repeated reference costs;
 *   <li>a stop is skipped;
 *   <li>an object the valid walk of a block stored earlier holds
 *       ({@link WalkIndex}) is counted once as shared and not followed;
 *       one that the walk of a block stored later holds is taken over:
 *       walked as this block's, that block's walk listed in
 *       {@link #overtaken} (the caller makes it walk again);
 *   <li>any other object is the block's: marked in the walk's
 *       {@link PageSet} with the pages it covers, counted with its size, its
 *       region's witness recorded if it is the first met there, and its
 *       references followed (unless it is opaque).
 * </ul>
 * The walk ends when the stack is empty, when it has counted the object
 * limit (cut), or when its pacer says stop (aborted). Nothing here knows
 * about GC epochs: the caller reads the epoch around {@link #run} and throws
 * a walk that a collection overlapped away.
 *
 * A child's address is its parent's slot decoded, read before and after the
 * reference itself: should a Spark thread change the slot in between, the
 * child is read again, so an address always belongs to the object followed.
 *
 * The holder array and the stacks are reused from walk to walk; references
 * they hold are cleared when a walk ends, so no walk keeps an object alive.
 */
final class GraphWalk {
    /** Called every PACE_OBJECTS objects; false stops the walk. */
    interface Pacer {
        boolean pace();
    }

    static final int PACE_OBJECTS = 1024;

    private final Layout.Table layouts;
    private final WalkIndex index;
    private final long limit;
    private final int pageSize, align, regionShift;
    private final Object[] holder = new Object[1];

    // The path: object, its layout, the next reference to look at.
    private Object[] stackObj = new Object[256];
    private Layout[] stackLay = new Layout[256];
    private int[] stackCur = new int[256];
    private int top;

    // Regions met and their witnesses: open addressing on region + 1.
    private long[] regionKeys = new long[64];
    private int regions;
    private long lastRegion = -1;

    // Results of the last run.
    long objects, bytes, sharedObjects, sharedBytes, opaqueObjects;
    boolean cut, aborted;
    /** The walk's objects; the caller owns it after run (and frees it). */
    PageSet pages;
    private PageSet shared;
    Object[] witnessObj = new Object[16];
    long[] witnessAddr = new long[16];
    int witnesses;
    /** Why the last opaque class met is opaque; null if none. */
    String opaqueWhy;
    /** The walks of later blocks that held objects the last run took over. */
    final List<WalkIndex.Holder> overtaken = new ArrayList<>();
    /** The order of the block being walked (WalkIndex.Holder.order). */
    private long order;

    GraphWalk(Layout.Table layouts, WalkIndex index, long limit, int pageSize, int align, int regionSize) {
        this.layouts = layouts;
        this.index = index;
        this.limit = limit;
        this.pageSize = pageSize;
        this.align = align;
        this.regionShift = Long.numberOfTrailingZeros(regionSize);
    }

    /**
     * Walks from root. Afterwards pages holds the walk's objects (the caller
     * frees it), and the counters, witnesses and flags describe it.
     */
    void run(Object[] root, long order, Pacer pacer) {
        this.order = order;
        overtaken.clear();
        objects = bytes = sharedObjects = sharedBytes = opaqueObjects = 0;
        cut = aborted = false;
        opaqueWhy = null;
        witnesses = 0;
        regions = 0;
        lastRegion = -1;
        Arrays.fill(regionKeys, 0);
        pages = new PageSet(pageSize, align);
        shared = null;
        top = 0;
        try {
            holder[0] = root;
            visit(root, ObjectAddress.address(holder), layouts.get(root.getClass()), pacer);
            while (top > 0 && !cut && !aborted) {
                int t = top - 1;
                Object o = stackObj[t];
                Layout lay = stackLay[t];
                int cur = stackCur[t];
                Object child = null;
                long off = 0, a = 0;
                if (lay.kind == Layout.OBJECTS) {
                    Object[] arr = (Object[]) o;
                    int len = arr.length;
                    while (cur < len && ((a = ObjectAddress.addressAt(o, off = lay.base + cur * lay.scale)) == 0 || met(a))) {
                        cur++; // skip nulls and objects met before
                    }
                    cur++;
                    child = cur <= len ? arr[cur - 1] : null;
                } else {
                    long[] refs = lay.refs;
                    while (cur < refs.length && ((a = ObjectAddress.addressAt(o, off = refs[cur])) == 0 || met(a))) {
                        cur++;
                    }
                    cur++;
                    child = cur <= refs.length ? RawAccess.getObject(o, off) : null;
                }
                if (child != null && ObjectAddress.addressAt(o, off) != a) {
                    // The slot changed under us: take the reference it holds now.
                    child = RawAccess.getObject(o, off);
                    holder[0] = child;
                    a = child == null ? 0 : ObjectAddress.address(holder);
                }
                stackCur[t] = cur;
                if (child == null) {
                    if (cur >= (lay.kind == Layout.OBJECTS ? ((Object[]) o).length : lay.refs.length)) {
                        stackObj[t] = null;
                        top = t;
                    }
                    continue;
                }
                if (met(a)) {
                    continue; // the slot's new referent was met before
                }
                Layout cl = layouts.get(child.getClass());
                if (cl.kind == Layout.STOP) {
                    continue;
                }
                visit(child, a, cl, pacer);
            }
        } finally {
            holder[0] = null;
            Arrays.fill(stackObj, 0, top, null);
            top = 0;
            if (shared != null) {
                shared.free();
                shared = null;
            }
        }
    }

    /**
     * Whether this walk met the object at a already, as its own or as
     * another walk's: the one test a repeated reference costs (arrays often
     * hold many references to a few objects: boxed small numbers, a shared
     * default), made before anything else is read of the object.
     */
    private boolean met(long a) {
        return pages.marked(a) || (shared != null && shared.marked(a));
    }

    /** Takes in an object not met before in this walk (see {@link #met}). */
    private void visit(Object o, long a, Layout l, Pacer pacer) {
        long size = l.size(o, align);
        WalkIndex.Holder h = index.holder(a);
        if (h != null && h.order() > order) {
            if (!overtaken.contains(h)) { // one or two walks: a list is enough
                overtaken.add(h);
            }
        } else if (h != null) {
            if (shared == null) {
                shared = new PageSet(pageSize, align);
            }
            if (shared.markStart(a)) {
                sharedObjects++;
                sharedBytes += size;
            }
            return;
        }
        pages.markStart(a);
        pages.cover(a, size);
        objects++;
        bytes += size;
        long region = a >>> regionShift;
        if (region != lastRegion) {
            lastRegion = region;
            witness(region, o, a);
        }
        if (l.kind == Layout.OPAQUE) {
            opaqueObjects++;
            opaqueWhy = l.why;
        } else if (l.kind == Layout.OBJECTS || (l.kind == Layout.FIELDS && l.refs.length > 0)) {
            push(o, l);
        }
        if (objects >= limit) {
            cut = true;
        }
        if (objects % PACE_OBJECTS == 0 && !pacer.pace()) {
            aborted = true;
        }
    }

    private void push(Object o, Layout l) {
        if (top == stackObj.length) {
            int n = top * 2;
            stackObj = Arrays.copyOf(stackObj, n);
            stackLay = Arrays.copyOf(stackLay, n);
            stackCur = Arrays.copyOf(stackCur, n);
        }
        stackObj[top] = o;
        stackLay[top] = l;
        stackCur[top] = 0;
        top++;
    }

    /** Records o as its region's witness unless the region has one. */
    private void witness(long region, Object o, long a) {
        long key = region + 1;
        int mask = regionKeys.length - 1;
        int i = (int) ((key * 0x9E3779B97F4A7C15L) >>> 40) & mask;
        for (;; i = (i + 1) & mask) {
            if (regionKeys[i] == key) {
                return;
            }
            if (regionKeys[i] == 0) {
                break;
            }
        }
        regionKeys[i] = key;
        regions++;
        if (witnesses == witnessObj.length) {
            witnessObj = Arrays.copyOf(witnessObj, witnesses * 2);
            witnessAddr = Arrays.copyOf(witnessAddr, witnesses * 2);
        }
        witnessObj[witnesses] = o;
        witnessAddr[witnesses++] = a;
        if (regions * 2 > regionKeys.length) {
            long[] old = regionKeys;
            regionKeys = new long[old.length * 2];
            regions = 0;
            for (long k : old) {
                if (k != 0) {
                    int m = regionKeys.length - 1;
                    int j = (int) ((k * 0x9E3779B97F4A7C15L) >>> 40) & m;
                    while (regionKeys[j] != 0) {
                        j = (j + 1) & m;
                    }
                    regionKeys[j] = k;
                    regions++;
                }
            }
        }
    }

    /** The witnesses of the last run, trimmed: objects and their addresses. */
    Object[] takeWitnessObjects() {
        Object[] w = Arrays.copyOf(witnessObj, witnesses);
        Arrays.fill(witnessObj, 0, witnesses, null);
        return w;
    }

    long[] witnessAddresses() {
        return Arrays.copyOf(witnessAddr, witnesses);
    }
}
