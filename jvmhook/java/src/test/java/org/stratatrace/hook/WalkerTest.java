package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class WalkerTest {
    /** A block young collections keep moving waits 1, 3, 7, then 15 of them. */
    @Test
    void backoffDoublesToFifteen() {
        long[] want = {1, 1, 3, 7, 15, 15, 15};
        for (int k = 0; k < want.length; k++) {
            assertEquals(want[k], Walker.backoff(k), "move " + k);
        }
        assertEquals(15, Walker.backoff(Integer.MAX_VALUE));
    }

    /** Which collectors move only young objects, which any, which none. */
    @Test
    void collectorKinds() {
        for (String young : new String[] {"G1 Young Generation", "PS Scavenge", "Copy", "ParNew"}) {
            assertEquals(1, Walker.kind(young), young);
        }
        for (String full : new String[] {"G1 Old Generation", "PS MarkSweep", "MarkSweepCompact", "Something New"}) {
            assertEquals(2, Walker.kind(full), full);
        }
        assertEquals(0, Walker.kind("G1 Concurrent GC"));
        assertEquals(0, Walker.kind("Epsilon"));
    }
}
