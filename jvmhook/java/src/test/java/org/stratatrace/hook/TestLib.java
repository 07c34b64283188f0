package org.stratatrace.hook;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * libstratahook.so for the tests that need it: make passes it as
 * -Dstrata.lib (and the test JVM runs it as its agent); without it those
 * tests skip and say so.
 */
final class TestLib {
    private TestLib() {}

    /** Loads the library and learns the reference encoding, or skips the test. */
    static void load() {
        String lib = System.getProperty("strata.lib");
        assumeTrue(lib != null && !lib.isEmpty(), "skipping: no -Dstrata.lib (make builds the library first)");
        System.load(lib);
        ObjectAddress.calibrate();
    }
}
