package org.stratatrace.sparkjob;

import java.lang.reflect.Method;

/**
 * Loads Spark's MemoryStore first thing in main, while the hook's boot may
 * still run on its own thread, and prints how many of the hook's
 * {@code strata$} methods the class has (0: not woven).
 */
public final class StrataBootProbe {
    private StrataBootProbe() {}

    public static void main(String[] args) throws Exception {
        Class<?> c = Class.forName("org.apache.spark.storage.memory.MemoryStore", false,
                StrataBootProbe.class.getClassLoader());
        int woven = 0;
        for (Method m : c.getDeclaredMethods()) {
            if (m.getName().startsWith("strata$")) {
                woven++;
            }
        }
        System.out.println("woven-methods=" + woven);
    }
}
