package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * WalkIndex.holder against a search of every walk's marks, on walks of
 * made-up addresses: extents of different walks overlapping, nested and
 * apart, walks added and removed, addresses inside, between and outside the
 * extents. Needs no JVM agent (PageSet's native memory is Unsafe's).
 */
class WalkIndexTest {
    private static final int PAGE = 4096, ALIGN = 8;

    static final class Walk implements WalkIndex.Holder {
        final PageSet set = new PageSet(PAGE, ALIGN);
        final List<Long> starts = new ArrayList<>();

        @Override
        public PageSet pages() {
            return set;
        }
    }

    /** The first walk in order that marked an object at addr and whose extents cover it: what holder must find. */
    private static Walk expected(List<Walk> walks, long addr) {
        for (Walk w : walks) {
            if (w.set.marked(addr)) {
                return w;
            }
        }
        return null;
    }

    @Test
    void holderMatchesEveryWalksMarks() {
        Random r = new Random(13);
        WalkIndex index = new WalkIndex();
        List<Walk> walks = new ArrayList<>();
        long base = 0x7f0000000000L;
        for (int round = 0; round < 40; round++) {
            if (walks.size() > 4 && r.nextInt(3) == 0) {
                Walk gone = walks.remove(r.nextInt(walks.size()));
                index.remove(gone);
                gone.set.free();
            } else {
                Walk w = new Walk();
                int objects = 1 + r.nextInt(200);
                // A cluster somewhere in 64 pages, so walks' pages overlap.
                long at = base + (long) r.nextInt(64) * PAGE;
                for (int k = 0; k < objects; k++) {
                    long a = at + (long) r.nextInt(8 * PAGE / ALIGN) * ALIGN;
                    if (expected(walks, a) == null && w.set.markStart(a)) {
                        w.starts.add(a);
                    }
                }
                if (r.nextInt(4) == 0) { // a large array: a run of pages
                    long a = base + (long) (80 + r.nextInt(40)) * PAGE;
                    if (expected(walks, a) == null && w.set.markStart(a)) {
                        w.starts.add(a);
                        w.set.cover(a, 10L * PAGE);
                    }
                }
                index.add(w, w.set.extents());
                walks.add(w);
            }
            for (int q = 0; q < 2000; q++) {
                long a;
                if (q % 2 == 0 && !walks.isEmpty()) {
                    Walk w = walks.get(r.nextInt(walks.size()));
                    a = w.starts.get(r.nextInt(w.starts.size())) + (r.nextBoolean() ? 0 : ALIGN * r.nextInt(3));
                } else {
                    a = base - 4L * PAGE + (long) r.nextInt(140 * PAGE / ALIGN) * ALIGN;
                }
                assertSame(expected(walks, a), index.holder(a), "round " + round + " addr " + Long.toHexString(a));
            }
        }
        for (Walk w : walks) {
            index.remove(w);
            w.set.free();
        }
        assertEquals(0, index.extents());
    }
}
