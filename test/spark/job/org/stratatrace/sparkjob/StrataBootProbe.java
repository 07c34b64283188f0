package org.stratatrace.sparkjob;

import java.lang.reflect.Method;

/**
 * Loads Spark's MemoryStore first thing in main, while the hook's boot may
 * still run on its own thread, and prints whether the class was woven (it
 * has the hook's {@code strata$} methods) and whether the boot's thread was
 * still alive when main started.
 */
public final class StrataBootProbe {
    private StrataBootProbe() {}

    public static void main(String[] args) throws Exception {
        boolean booting = false;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            booting |= t.getName().equals("strata-hook-boot");
        }
        Class<?> c = Class.forName("org.apache.spark.storage.memory.MemoryStore", false,
                StrataBootProbe.class.getClassLoader());
        int woven = 0;
        for (Method m : c.getDeclaredMethods()) {
            if (m.getName().startsWith("strata$")) {
                woven++;
            }
        }
        System.out.println("booting-at-main=" + booting + " woven-methods=" + woven);
    }
}
