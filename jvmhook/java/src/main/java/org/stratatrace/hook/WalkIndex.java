package org.stratatrace.hook;

import java.util.Arrays;

/**
 * The extents of every valid walk, sorted by address, to find the block
 * whose walk holds an object: the blocks whose extents cover its address
 * are asked whether it starts an object they marked ({@link PageSet}).
 * Extents of one walk are disjoint; those of different walks may overlap
 * (a page holding objects of both). Rebuilt by merging when a walk becomes
 * valid or stops being so; used only on the walker's thread.
 */
final class WalkIndex {
    /** What the index knows of a walk: its extents and its object starts. */
    interface Holder {
        PageSet pages();

        /**
         * The order its block was stored in: an object belongs to the
         * walk of the earliest block that reaches it (see GraphWalk).
         */
        default long order() {
            return Long.MIN_VALUE;
        }
    }

    private long[] lo = new long[0], hi = new long[0];
    /** reach[i]: the largest hi of extents 0..i, so a search stops early. */
    private long[] reach = new long[0];
    private Holder[] owner = new Holder[0];
    private int n;
    /** The last address range found covered by no extent: [gapLo, gapHi). */
    private long gapLo, gapHi;
    /** 1, read from the heap by {@link #holder}'s scan (see there). */
    private int step = 1;

    int extents() {
        return n;
    }

    /** Adds a walk's extents ({vaddr, length} pairs, ascending). */
    void add(Holder h, long[] ext) {
        int k = ext.length / 2;
        long[] nlo = new long[n + k], nhi = new long[n + k];
        Holder[] now = new Holder[n + k];
        int i = 0, j = 0, m = 0;
        while (i < n || j < k) {
            if (j >= k || (i < n && lo[i] <= ext[2 * j])) {
                nlo[m] = lo[i];
                nhi[m] = hi[i];
                now[m++] = owner[i++];
            } else {
                nlo[m] = ext[2 * j];
                nhi[m] = ext[2 * j] + ext[2 * j + 1];
                now[m++] = h;
                j++;
            }
        }
        set(nlo, nhi, now, m);
    }

    /** Removes every extent of a walk. */
    void remove(Holder h) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (owner[i] != h) {
                lo[m] = lo[i];
                hi[m] = hi[i];
                owner[m++] = owner[i];
            }
        }
        Arrays.fill(owner, m, n, null);
        set(lo, hi, owner, m);
    }

    private void set(long[] nlo, long[] nhi, Holder[] now, int m) {
        lo = nlo;
        hi = nhi;
        owner = now;
        n = m;
        if (reach.length < m) {
            reach = new long[m];
        }
        long r = Long.MIN_VALUE;
        for (int i = 0; i < m; i++) {
            r = Math.max(r, hi[i]);
            reach[i] = r;
        }
        gapLo = gapHi = 0;
    }

    /**
     * The walk that holds an object starting at addr, or null. Two binary
     * searches and one ascending scan, with no branch that only some walks
     * take: the walker's inner step inlines this, and a branch the JIT saw
     * untaken while the index was still empty would cost a recompilation.
     */
    Holder holder(long addr) {
        if (addr >= gapLo & addr < gapHi) {
            return null;
        }
        int i = lastStartingAtOrBelow(addr);
        if (i < 0 || reach[i] <= addr) {
            // No extent covers addr: remember the gap it is in.
            gapLo = i < 0 ? Long.MIN_VALUE : reach[i];
            gapHi = i + 1 < n ? lo[i + 1] : Long.MAX_VALUE;
            return null;
        }
        // reach ascends, so the extents that may cover addr are k..i. The
        // step is read from a field, not the constant 1, so that the JIT
        // does not make this scan a counted loop, whose loop limit check
        // fails here and makes it compile the walker again (docs/smtt.md).
        for (int j = firstReaching(addr, i); j <= i; j += step) {
            if (hi[j] > addr && owner[j].pages().marked(addr)) {
                return owner[j];
            }
        }
        return null;
    }

    /** The last extent starting at or below addr, or -1. */
    private int lastStartingAtOrBelow(long addr) {
        int a = 0, b = n;
        while (a < b) { // lo[a-1] <= addr < lo[b]
            int mid = (a + b) >>> 1;
            if (lo[mid] <= addr) {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        return a - 1;
    }

    /** The first extent at or before i whose reach passes addr (reach[i] does). */
    private int firstReaching(long addr, int i) {
        int a = 0, b = i;
        while (a < b) { // reach[a-1] <= addr < reach[b]
            int mid = (a + b) >>> 1;
            if (reach[mid] > addr) {
                b = mid;
            } else {
                a = mid + 1;
            }
        }
        return a;
    }
}
