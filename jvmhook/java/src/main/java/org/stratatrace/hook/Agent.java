package org.stratatrace.hook;

import java.io.File;
import java.io.InputStream;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;

/**
 * The hook's Java side, started one of two ways:
 * <pre>
 *   -agentpath:libstratahook.so=jar=strata-hook.jar[,socket=PATH][,reconnect-ms=N]
 *       the library puts the jar on the system class path, calls boot when
 *       the VM has started and hands over the three classes the weaver wants
 *       from its own ClassFileLoadHook (the one JVMTI agent, and the cheaper);
 *   -agentpath:libstratahook.so -javaagent:strata-hook.jar=[lib=PATH,]socket=...
 *       premain through java.lang.instrument (a transformer; kept for
 *       configurations written that way).
 * </pre>
 * Options, comma-separated key=value:
 * <pre>
 *   jar=PATH          strata-hook.jar (the library's form only)
 *   lib=PATH          libstratahook.so (default: beside strata-hook.jar)
 *   socket=PATH       the agent's hook socket (default $STRATA_HOOK_SOCKET,
 *                     then /run/strata/hook.sock)
 *   reconnect-ms=N    how often to retry a lost connection (default 1000)
 *   walk=on|off       walk the object graphs of deserialized blocks (default on)
 *   walk-cpu=PCT      CPU the walker may spend, percent of one CPU (default 5)
 *   walk-objects=N    objects one walk counts before it is cut (default 16777216)
 *   walk-nice=N       the walker thread's nice value, 0 to 19 (default 10)
 * </pre>
 * Built for Java 11 (--release 11), it runs on every JVM Spark runs on from
 * Java 11. Whatever fails, the JVM runs on unchanged: the hook prints one
 * line saying why it is off (and, in the library's form, tells the agent). At exit it prints its counters (frames sent and dropped,
 * live blocks, GCs seen, moves reported, the walker's walks, objects, stale
 * marks, cut walks and CPU time) on one stderr line.
 */
public final class Agent {
    private Agent() {}

    public static void premain(String args, Instrumentation inst) {
        try {
            inst.addTransformer(new Transformer(start(parse(args)), inst), false);
        } catch (Throwable t) {
            System.err.println("strata-hook: off: " + t);
        }
    }

    /** The classes to weave for the library's hook, once booted; null while off. */
    private static volatile Woven woven;

    /** Why boot left the hook off, as printed after "strata-hook: off: "; read by the library. */
    static volatile String offDetail;

    /**
     * Called by libstratahook.so when the VM has started, with the options of
     * its -agentpath: 0 when the hook is on, else why it stays off (enum
     * strata_off_reason: {@link Wire#OFF_OPTIONS} for options it cannot
     * take, {@link Wire#OFF_JAVA_START} for any other failure), the reason
     * printed and kept in {@link #offDetail}. The library then stops posting
     * class loads and reports the hook off to the agent.
     */
    static int boot(String args) {
        Map<String, String> opt;
        try {
            opt = parse(args);
            Walker.configure(opt);
            Integer.parseInt(opt.getOrDefault("reconnect-ms", "1000"));
        } catch (Throwable t) {
            return off(Wire.OFF_OPTIONS, t);
        }
        try {
            woven = start(opt);
            return 0;
        } catch (Throwable t) {
            return off(Wire.OFF_JAVA_START, t);
        }
    }

    private static int off(int reason, Throwable t) {
        offDetail = t.toString();
        System.err.println("strata-hook: off: " + t);
        return reason;
    }

    /**
     * Called by libstratahook.so for each class the weaver wants, by internal
     * name, as it loads: the class file to define instead, or null for the
     * original.
     */
    static byte[] transform(String name, byte[] classfile) {
        Woven w = woven;
        return w == null ? null : w.weave(name, classfile);
    }

    static Map<String, String> parse(String args) {
        Map<String, String> m = new HashMap<>();
        if (args == null || args.isEmpty()) {
            return m;
        }
        for (String kv : args.split(",")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("agent option " + kv + ": want key=value");
            }
            String k = kv.substring(0, eq);
            switch (k) {
                case "jar": case "lib": case "socket": case "reconnect-ms":
                case "walk": case "walk-cpu": case "walk-objects": case "walk-nice":
                    break;
                default:
                    throw new IllegalArgumentException("unknown agent option " + k);
            }
            m.put(k, kv.substring(eq + 1));
        }
        return m;
    }

    private static Woven start(Map<String, String> opt) throws Exception {
        String lib = opt.get("lib");
        if (lib == null) {
            File jar = new File(Agent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            lib = new File(jar.getParentFile(), "libstratahook.so").getPath();
        }
        Walker.configure(opt);
        // A relative -agentpath (files shipped into a YARN container's
        // working directory) names the library relative to it; System.load
        // wants an absolute path.
        System.load(new File(lib).getAbsolutePath());
        int reconnect = Integer.parseInt(opt.getOrDefault("reconnect-ms", "1000"));
        String refs;
        try {
            refs = ObjectAddress.calibrate();
        } catch (RuntimeException e) {
            refs = "object arrays unavailable: " + e.getMessage();
        }
        int rc = Native.start(opt.getOrDefault("socket", ""), reconnect, (int) ObjectAddress.BYTE_BASE,
                (int) ObjectAddress.LONG_BASE, ObjectAddress.REF_SIZE, Walker.startMode());
        if (rc != 0) {
            throw new IllegalStateException("start native hook: errno " + (-rc));
        }
        Woven w = new Woven(prepareAhead());
        Blocks.enabled = true;
        System.err.println("strata-hook: on (" + refs + ")");
        Exit exit = new Exit();
        try {
            Runtime.getRuntime().addShutdownHook(exit);
        } catch (IllegalStateException e) {
            exit.run(); // the JVM ended during the boot and waits for it: report now
        }
        return w;
    }

    /**
     * Reports the hook's counters at exit. Start-up and exit run on the
     * JVM's own threads, so neither uses a lambda, a method reference or
     * String.format: their first use costs milliseconds of class spinning
     * (the build also compiles string concatenation inline, not through
     * invokedynamic).
     */
    private static final class Exit extends Thread {
        Exit() {
            super("strata-hook-exit");
        }

        @Override
        public void run() {
            Native.report();
            long[] s = Native.stats();
            System.err.println("strata-hook: sent=" + s[0] + " dropped=" + s[1] + " live=" + s[2] + " gcs=" + s[3]
                    + " moves=" + s[5] + " collected=" + s[6] + " connects=" + s[4] + " errors=" + Blocks.ERRORS.get()
                    + " left-out=" + CachedBatches.LEFT_OUT.get() + " fills=" + s[7] + " fills-stored=" + s[8]
                    + Walker.counters());
        }
    }

    /**
     * Weaves the classes the weaver wants from the system class path on a
     * daemon thread ahead of their loading (a Spark JVM loads them seconds
     * later, after its configuration and RPC set-up), so that the thread
     * loading them does not wait for the weaving (milliseconds, interpreted);
     * should one load sooner, or from other bytes, it is woven as it loads.
     * When they come from the system class path, the thread then prepares
     * the handles Spark's threads will use ({@link Spark#prepare}).
     */
    private static Future<Map<String, byte[][]>> prepareAhead() {
        FutureTask<Map<String, byte[][]>> prepared = new FutureTask<>(new Callable<Map<String, byte[][]>>() {
            @Override
            public Map<String, byte[][]> call() {
                return prepare();
            }
        });
        Thread t = new Thread(new Runnable() {
            @Override
            public void run() {
                prepared.run();
                try {
                    if (prepared.get().containsKey(Weaver.MEMORY_STORE)) {
                        Spark.prepare(ClassLoader.getSystemClassLoader());
                    }
                } catch (Throwable e) {
                    // Spark's threads look the handles up themselves.
                }
            }
        }, "strata-hook-init");
        t.setDaemon(true);
        t.start();
        return prepared;
    }

    /** Class file as found on the system class path, and woven, by internal name. */
    private static Map<String, byte[][]> prepare() {
        Map<String, byte[][]> m = new HashMap<>();
        ClassLoader sys = ClassLoader.getSystemClassLoader();
        for (String internal : new String[] {Weaver.MEMORY_STORE, Weaver.TASK_MEMORY_MANAGER, Weaver.RDD}) {
            try (InputStream in = sys.getResourceAsStream(internal + ".class")) {
                if (in != null) {
                    byte[] original = in.readAllBytes();
                    m.put(internal, new byte[][] {original, Weaver.weave(internal, original)});
                }
            } catch (Throwable e) {
                // Woven when loaded instead, where a failure is printed.
            }
        }
        return m;
    }

    /**
     * The classes the weaver wants, woven as each is defined, and which of
     * them are still to come.
     */
    static final class Woven {
        private final Future<Map<String, byte[][]>> prepared;
        private final Set<String> waiting = ConcurrentHashMap.newKeySet();

        Woven(Future<Map<String, byte[][]>> prepared) {
            this.prepared = prepared;
            waiting.addAll(Weaver.classes());
        }

        /** The woven class file of a wanted class, or null to load it unchanged. */
        byte[] weave(String name, byte[] classfile) {
            if (name == null || !Weaver.wants(name)) {
                return null;
            }
            try {
                byte[][] p = prepared.get().get(name);
                if (p != null && Arrays.equals(p[0], classfile)) {
                    return p[1];
                }
                return Weaver.weave(name, classfile);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } catch (Throwable t) {
                // The JVM would drop it silently; the class loads unchanged.
                System.err.println("strata-hook: instrument " + name.replace('/', '.') + ": " + t);
                return null;
            }
        }

        /** Notes that a wanted class is being defined; true for the last of them. */
        boolean arrived(String name) {
            return waiting.remove(name) && waiting.isEmpty();
        }
    }

    /**
     * The java.lang.instrument form: hands the weaver its classes and removes
     * itself once each has been defined: with no transformer left the JVM
     * stops posting every class load to the agent (JPLIS turns its
     * ClassFileLoadHook off), which otherwise copies each class file into a
     * Java array and calls up into Java for it and, for a class from the CDS
     * archive, reads its bytes from the runtime image first. Spark's classes
     * are defined once, by the application class loader; a second loader
     * defining one again would load it unwoven.
     */
    static final class Transformer implements ClassFileTransformer {
        private final Woven woven;
        private final Instrumentation inst;

        Transformer(Woven woven, Instrumentation inst) {
            this.woven = woven;
            this.inst = inst;
        }

        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain,
                byte[] classfile) {
            if (name != null && woven.arrived(name)) {
                inst.removeTransformer(this); // takes effect from the next class defined
            }
            return woven.weave(name, classfile);
        }
    }
}
