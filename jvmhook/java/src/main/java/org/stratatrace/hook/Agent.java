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
 * The -javaagent entry point. Options, comma-separated key=value:
 * <pre>
 *   lib=PATH          libstratahook.so (default: beside strata-hook.jar)
 *   socket=PATH       the agent's hook socket (default $STRATA_HOOK_SOCKET,
 *                     then /run/strata/hook.sock)
 *   reconnect-ms=N    how often to retry a lost connection (default 1000)
 * </pre>
 * Whatever fails, the JVM runs on unchanged: the hook prints one line saying
 * why it is off. At exit it prints its counters (frames sent and dropped,
 * live blocks, GCs seen, moves reported) on one stderr line.
 */
public final class Agent {
    private Agent() {}

    public static void premain(String args, Instrumentation inst) {
        try {
            start(parse(args), inst);
        } catch (Throwable t) {
            System.err.println("strata-hook: off: " + t);
        }
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
            if (!k.equals("lib") && !k.equals("socket") && !k.equals("reconnect-ms")) {
                throw new IllegalArgumentException("unknown agent option " + k);
            }
            m.put(k, kv.substring(eq + 1));
        }
        return m;
    }

    private static void start(Map<String, String> opt, Instrumentation inst) throws Exception {
        String lib = opt.get("lib");
        if (lib == null) {
            File jar = new File(Agent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            lib = new File(jar.getParentFile(), "libstratahook.so").getPath();
        }
        System.load(lib);
        int reconnect = Integer.parseInt(opt.getOrDefault("reconnect-ms", "1000"));
        int rc = Native.start(opt.getOrDefault("socket", ""), reconnect, (int) ObjectAddress.BYTE_BASE,
                (int) ObjectAddress.LONG_BASE, ObjectAddress.REF_SIZE);
        if (rc != 0) {
            throw new IllegalStateException("start native hook: errno " + (-rc));
        }
        String refs;
        try {
            refs = ObjectAddress.calibrate();
        } catch (RuntimeException e) {
            refs = "object arrays unavailable: " + e.getMessage();
        }
        install(inst);
        Blocks.enabled = true;
        Runtime.getRuntime().addShutdownHook(new Exit());
        System.err.println("strata-hook: on (" + refs + ")");
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
                    + " moves=" + s[5] + " collected=" + s[6] + " connects=" + s[4] + " errors=" + Blocks.ERRORS.get());
        }
    }

    /**
     * Installs the transformer, which looks at class names only, and weaves
     * the classes it wants from the system class path on a daemon thread
     * ahead of their loading (a Spark JVM loads them seconds later, after
     * its configuration and RPC set-up), so that the thread loading them
     * does not wait for ASM's classes and the weaving; should one load
     * sooner, or from other bytes, it is woven as it loads.
     */
    private static void install(Instrumentation inst) {
        FutureTask<Map<String, byte[][]>> prepared = new FutureTask<>(new Callable<Map<String, byte[][]>>() {
            @Override
            public Map<String, byte[][]> call() {
                return prepare();
            }
        });
        Thread t = new Thread(prepared, "strata-hook-init");
        t.setDaemon(true);
        t.start();
        inst.addTransformer(new Transformer(prepared, inst), false);
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
     * Hands the weaver the classes it instruments, by name, and removes
     * itself once each has been defined: with no transformer left the JVM
     * stops posting every class load to the agent (JPLIS turns its
     * ClassFileLoadHook off), which otherwise copies each class file and,
     * for a class from the CDS archive, reads its bytes from the runtime
     * image first. Spark's classes are defined once, by the application
     * class loader; a second loader defining one again would load it
     * unwoven.
     */
    static final class Transformer implements ClassFileTransformer {
        private final Future<Map<String, byte[][]>> prepared;
        private final Instrumentation inst;
        private final Set<String> waiting = ConcurrentHashMap.newKeySet();

        Transformer(Future<Map<String, byte[][]>> prepared, Instrumentation inst) {
            this.prepared = prepared;
            this.inst = inst;
            waiting.addAll(Weaver.classes());
        }

        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain,
                byte[] classfile) {
            if (name == null || !Weaver.wants(name)) {
                return null;
            }
            if (waiting.remove(name) && waiting.isEmpty()) {
                inst.removeTransformer(this); // takes effect from the next class defined
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
    }
}
