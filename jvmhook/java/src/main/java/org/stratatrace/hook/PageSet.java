package org.stratatrace.hook;

import java.util.Arrays;

/**
 * The pages one walk touched and the objects that start in them, in native
 * memory (Unsafe.allocateMemory), so that a walk's bookkeeping neither
 * grows the Java heap Spark sized nor adds to its collections' work:
 *
 * <ul>
 *   <li>a hash table, page number to the address of that page's bitmap of
 *       object starts (one bit per alignment unit: 64 bytes per 4 KiB page
 *       with 8-byte alignment), or 0 for a page that only the middle or end
 *       of an object covers; 16 bytes per entry, at most half full;
 *   <li>the bitmaps, cut from 64 KiB chunks;
 *   <li>the page runs of objects longer than {@link #SPAN_PAGES} pages
 *       (large arrays), kept as runs rather than one entry per page.
 * </ul>
 *
 * The bitmap is the walk's visited set and, once the walk is valid, the
 * block's claim on its objects ({@link WalkIndex}). Used by one thread at a
 * time; {@link #free} releases every byte, after which the set is empty and
 * unusable.
 */
final class PageSet {
    /** Objects covering more pages than this beyond their first are kept as runs. */
    static final int SPAN_PAGES = 4;
    private static final long CHUNK = 64 << 10;
    /** Packed runs: page number << RUN_SHIFT | pages (a run longer is split). */
    private static final int RUN_SHIFT = 18;
    private static final long RUN_MAX = (1L << RUN_SHIFT) - 1;

    private final int pageShift;
    private final long pageMask;
    private final int unitShift;
    private final long bitmapBytes;

    private long table; // cap entries of {page + 1 (0: empty), bitmap address or 0}
    private int cap, used;
    // The last page found and its entry: a walk meets the objects of a page
    // one after another.
    private long lastPage = -1, lastEntry;
    private long[] chunks = new long[4];
    private int nchunks;
    private long next, left; // the current chunk's free bytes
    private long[] runs = new long[0];
    private int nruns;
    private long nativeBytes;

    /** pageSize and align are powers of two, align at most pageSize / 64. */
    PageSet(int pageSize, int align) {
        pageShift = Long.numberOfTrailingZeros(pageSize);
        pageMask = pageSize - 1L;
        unitShift = Long.numberOfTrailingZeros(align);
        bitmapBytes = Math.max(8, (pageSize >>> unitShift) / 8);
        cap = 64;
        table = RawAccess.allocateZeroed(cap * 16L);
        nativeBytes = cap * 16L;
    }

    /** Native memory this set holds, in bytes. */
    long nativeBytes() {
        return nativeBytes;
    }

    private static int mix(long page) {
        long h = page * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 32);
    }

    /** The table entry of page, or -1. */
    private long entry(long page) {
        if (page == lastPage) {
            return lastEntry;
        }
        return table == 0 ? -1 : probe(page, false);
    }

    /** The table entry of page, added (with no bitmap) if absent. */
    private long add(long page) {
        if (table == 0) {
            throw new IllegalStateException("page set used after free");
        }
        if (page == lastPage) {
            return lastEntry;
        }
        if ((used + 1) * 2 > cap) {
            grow();
        }
        return probe(page, true);
    }

    /** Linear probing for page's entry; at an empty slot, takes it if insert, else -1. */
    private long probe(long page, boolean insert) {
        long key = page + 1;
        int mask = cap - 1;
        for (int i = mix(page) & mask;; i = (i + 1) & mask) {
            long e = table + i * 16L;
            long k = RawAccess.getLong(e);
            if (k == key) {
                lastPage = page;
                lastEntry = e;
                return e;
            }
            if (k == 0) {
                if (!insert) {
                    return -1;
                }
                RawAccess.putLong(e, key);
                used++;
                lastPage = page;
                lastEntry = e;
                return e;
            }
        }
    }

    private void grow() {
        lastPage = -1;
        long old = table;
        int oldCap = cap;
        cap = oldCap * 2;
        table = RawAccess.allocateZeroed(cap * 16L);
        nativeBytes += cap * 16L - oldCap * 16L;
        int mask = cap - 1;
        for (int j = 0; j < oldCap; j++) {
            long k = RawAccess.getLong(old + j * 16L);
            if (k != 0) {
                int i = mix(k - 1) & mask;
                while (RawAccess.getLong(table + i * 16L) != 0) {
                    i = (i + 1) & mask;
                }
                RawAccess.putLong(table + i * 16L, k);
                RawAccess.putLong(table + i * 16L + 8, RawAccess.getLong(old + j * 16L + 8));
            }
        }
        RawAccess.freeMemory(old);
    }

    private long bitmap() {
        if (left < bitmapBytes) {
            if (nchunks == chunks.length) {
                chunks = Arrays.copyOf(chunks, nchunks * 2);
            }
            next = RawAccess.allocateZeroed(CHUNK);
            left = CHUNK;
            chunks[nchunks++] = next;
            nativeBytes += CHUNK;
        }
        long b = next;
        next += bitmapBytes;
        left -= bitmapBytes;
        return b;
    }

    /** Whether an object starting at addr is marked. */
    boolean marked(long addr) {
        long e = entry(addr >>> pageShift);
        if (e < 0) {
            return false;
        }
        long b = RawAccess.getLong(e + 8);
        if (b == 0) {
            return false;
        }
        long bit = (addr & pageMask) >>> unitShift;
        return (RawAccess.getLong(b + (bit >>> 6) * 8) & (1L << bit)) != 0;
    }

    /** Marks an object starting at addr; false when it was marked already. */
    boolean markStart(long addr) {
        long e = add(addr >>> pageShift);
        long b = RawAccess.getLong(e + 8);
        if (b == 0) {
            b = bitmap();
            RawAccess.putLong(e + 8, b);
        }
        long bit = (addr & pageMask) >>> unitShift;
        long w = b + (bit >>> 6) * 8;
        long v = RawAccess.getLong(w);
        long m = 1L << bit;
        if ((v & m) != 0) {
            return false;
        }
        RawAccess.putLong(w, v | m);
        return true;
    }

    /** Adds the pages after addr's own that an object of size bytes at addr covers. */
    void cover(long addr, long size) {
        long first = addr >>> pageShift;
        long last = (addr + size - 1) >>> pageShift;
        if (last - first > SPAN_PAGES) {
            addRun(first + 1, last - first);
            return;
        }
        int n = (int) (last - first); // at most SPAN_PAGES: an int loop with an exclusive bound
        for (int i = 1; i <= n; i++) {
            add(first + i);
        }
    }

    private void addRun(long page, long pages) {
        while (pages > 0) {
            long n = Math.min(pages, RUN_MAX);
            if (nruns == runs.length) {
                runs = Arrays.copyOf(runs, Math.max(16, nruns * 2));
            }
            runs[nruns++] = page << RUN_SHIFT | n;
            page += n;
            pages -= n;
        }
    }

    /** Pages in the set (those of runs counted once per run they are in). */
    long pages() {
        long n = used;
        for (int i = 0; i < nruns; i++) {
            n += runs[i] & RUN_MAX;
        }
        return n;
    }

    /**
     * The runs of consecutive pages in the set, as {vaddr, length} pairs,
     * ascending and disjoint; the array's length is twice the number of runs.
     */
    long[] extents() {
        long[] all = new long[used + nruns];
        int n = 0;
        for (int i = 0; i < cap; i++) {
            long k = RawAccess.getLong(table + i * 16L);
            if (k != 0) {
                all[n++] = (k - 1) << RUN_SHIFT | 1;
            }
        }
        System.arraycopy(runs, 0, all, n, nruns);
        n += nruns;
        Arrays.sort(all, 0, n);
        long[] out = new long[16];
        int m = 0;
        long lo = -1, hi = -1; // current run, pages [lo, hi)
        for (int i = 0; i < n; i++) {
            long p = all[i] >>> RUN_SHIFT, q = p + (all[i] & RUN_MAX);
            if (lo >= 0 && p <= hi) {
                hi = Math.max(hi, q);
                continue;
            }
            if (lo >= 0) {
                out = put(out, m, lo, hi);
                m += 2;
            }
            lo = p;
            hi = q;
        }
        if (lo >= 0) {
            out = put(out, m, lo, hi);
            m += 2;
        }
        return Arrays.copyOf(out, m);
    }

    private long[] put(long[] out, int m, long lo, long hi) {
        if (m + 2 > out.length) {
            out = Arrays.copyOf(out, out.length * 2);
        }
        out[m] = lo << pageShift;
        out[m + 1] = (hi - lo) << pageShift;
        return out;
    }

    /** Releases the native memory; the set is empty and unusable after. */
    void free() {
        lastPage = -1;
        if (table != 0) {
            RawAccess.freeMemory(table);
            table = 0;
        }
        for (int i = 0; i < nchunks; i++) {
            RawAccess.freeMemory(chunks[i]);
        }
        nchunks = 0;
        cap = 0;
        used = 0;
        nruns = 0;
        left = 0;
        nativeBytes = 0;
    }
}
