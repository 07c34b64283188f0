package org.stratatrace.hook;

import static net.bytebuddy.matcher.ElementMatchers.isStatic;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.io.File;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;

import net.bytebuddy.ByteBuddy;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.asm.AsmVisitorWrapper;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.dynamic.scaffold.MethodGraph;
import net.bytebuddy.dynamic.scaffold.TypeValidation;
import net.bytebuddy.implementation.Implementation;
import net.bytebuddy.pool.TypePool;

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

    static final String MEMORY_STORE = "org.apache.spark.storage.memory.MemoryStore";
    static final String TASK_MEMORY_MANAGER = "org.apache.spark.memory.TaskMemoryManager";
    static final String RDD = "org.apache.spark.rdd.RDD";

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
        Runtime.getRuntime().addShutdownHook(new Thread(Agent::exit, "strata-hook-exit"));
        System.err.println("strata-hook: on (" + refs + ")");
    }

    private static void exit() {
        Native.report();
        long[] s = Native.stats();
        System.err.printf("strata-hook: sent=%d dropped=%d live=%d gcs=%d moves=%d collected=%d connects=%d errors=%d%n",
                s[0], s[1], s[2], s[3], s[5], s[6], s[4], Blocks.ERRORS.get());
    }

    /**
     * Installs the transformer at once and builds the weaver behind it on a
     * daemon thread, so the JVM's start does not wait for Byte Buddy's
     * classes. A Spark JVM loads the first class we instrument seconds
     * later, after its configuration and RPC set-up; should one come sooner,
     * its loading waits for the build.
     */
    private static void install(Instrumentation inst) {
        FutureTask<Weaver> weaver = new FutureTask<>(Weaver::new);
        Thread t = new Thread(weaver, "strata-hook-init");
        t.setDaemon(true);
        t.start();
        inst.addTransformer(new Transformer(weaver), false);
    }

    /**
     * Weaves the advices into the three classes we instrument, the class
     * file decorated as it is (Advice only rewrites method bodies; no class
     * format change, no type rebuilt, only declared methods looked at).
     * Byte Buddy is used without its AgentBuilder, whose set-up alone cost a
     * JVM 0.3-0.4 s of one core, and the JVM's other classes never reach
     * Byte Buddy: the transformer looks at their names only (Byte Buddy's
     * own matching of every loaded class cost a Spark driver about 1.2 s of
     * CPU at start-up).
     */
    static final class Weaver {
        private final ByteBuddy byteBuddy = new ByteBuddy()
                .with(TypeValidation.DISABLED)
                .with(Implementation.Context.Disabled.Factory.INSTANCE)
                .with(MethodGraph.Compiler.ForDeclaredMethods.INSTANCE);
        /** By internal class name. */
        private final Map<String, AsmVisitorWrapper> advices = new HashMap<>();

        Weaver() {
            advices.put(internal(MEMORY_STORE), new AsmVisitorWrapper.Compound(
                    Advice.to(Advices.Put.class).on(named("putBytes").or(named("putIteratorAsValues"))
                            .or(named("putIteratorAsBytes")).and(not(isStatic()))),
                    Advice.to(Advices.Read.class).on(named("getBytes").or(named("getValues"))
                            .and(takesArguments(1))),
                    Advice.to(Advices.Remove.class).on(named("remove").and(takesArguments(1))),
                    Advice.to(Advices.Evict.class).on(named("evictBlocksToFreeSpace")),
                    Advice.to(Advices.Clear.class).on(named("clear").and(takesArguments(0)))));
            advices.put(internal(TASK_MEMORY_MANAGER), new AsmVisitorWrapper.Compound(
                    Advice.to(Advices.Allocate.class).on(named("allocatePage").or(named("allocatePageInternal"))),
                    Advice.to(Advices.FreePage.class).on(named("freePage")),
                    Advice.to(Advices.Cleanup.class).on(named("cleanUpAllAllocatedMemory"))));
            advices.put(internal(RDD), Advice.to(Advices.RddIterator.class)
                    .on(named("iterator").and(takesArguments(2))));
        }

        static String internal(String className) {
            return className.replace('.', '/');
        }

        /** The class file with the advices woven in. */
        byte[] weave(ClassLoader loader, String internalName, byte[] classfile) {
            String name = internalName.replace('/', '.');
            ClassFileLocator locator = new ClassFileLocator.Compound(ClassFileLocator.Simple.of(name, classfile),
                    loader == null ? ClassFileLocator.ForClassLoader.ofBootLoader()
                            : ClassFileLocator.ForClassLoader.of(loader));
            TypePool pool = new TypePool.Default.WithLazyResolution(new TypePool.CacheProvider.Simple(), locator,
                    TypePool.Default.ReaderMode.FAST);
            return byteBuddy.decorate(pool.describe(name).resolve(), locator)
                    .visit(advices.get(internalName))
                    .make(pool)
                    .getBytes();
        }
    }

    /** Hands the weaver the classes it instruments, by name. */
    static final class Transformer implements ClassFileTransformer {
        private static final Set<String> NAMES = Set.of(Weaver.internal(MEMORY_STORE),
                Weaver.internal(TASK_MEMORY_MANAGER), Weaver.internal(RDD));
        private final Future<Weaver> weaver;

        Transformer(Future<Weaver> weaver) {
            this.weaver = weaver;
        }

        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain,
                byte[] classfile) {
            if (name == null || !NAMES.contains(name)) {
                return null;
            }
            try {
                return weaver.get().weave(loader, name, classfile);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } catch (ExecutionException e) {
                System.err.println("strata-hook: instrument " + name.replace('/', '.') + ": " + e.getCause());
                return null;
            } catch (Throwable t) {
                // The JVM would drop it silently; the class loads unchanged.
                System.err.println("strata-hook: instrument " + name.replace('/', '.') + ": " + t);
                return null;
            }
        }
    }
}
