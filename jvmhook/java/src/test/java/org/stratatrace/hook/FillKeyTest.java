package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The key a put's fill marks carry must be the one the agent computes from
 * the block's name in its REGISTER (agent/faults FillKey, whose test holds
 * the same values).
 */
class FillKeyTest {
    @Test
    void fnv1aOfTheName() {
        assertEquals(0xcbf29ce484222325L, Blocks.fillKey(""));
        assertEquals(0x2664b0e2b8411de8L, Blocks.fillKey("rdd_3_0"));
    }
}
