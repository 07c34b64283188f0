package org.stratatrace.hook;

/**
 * GraphWalkTest's class whose reflection throws: it is defined in a loader
 * that cannot load {@link Missing}, the type of its field, so
 * getDeclaredFields fails with NoClassDefFoundError.
 */
public class Broken {
    Missing missing;
    byte[] data = new byte[32];

    public Broken() {}

    /** Present at compile time, absent from Broken's loader in the test. */
    public static class Missing {}
}
