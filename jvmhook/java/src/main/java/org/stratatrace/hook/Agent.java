package org.stratatrace.hook;

import static net.bytebuddy.matcher.ElementMatchers.isStatic;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.not;
import static net.bytebuddy.matcher.ElementMatchers.takesArguments;

import java.io.File;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.IllegalClassFormatException;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.utility.JavaModule;

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

    private static AgentBuilder.Transformer advise(Class<?> advice, net.bytebuddy.matcher.ElementMatcher<
            ? super net.bytebuddy.description.method.MethodDescription> methods) {
        return (DynamicType.Builder<?> b, TypeDescription t, ClassLoader l, JavaModule m,
                ProtectionDomain pd) -> b.visit(Advice.to(advice).on(methods));
    }

    private static void install(Instrumentation inst) {
        ClassFileTransformer bb = new AgentBuilder.Default()
                .disableClassFormatChanges()
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onError(String typeName, ClassLoader loader, JavaModule module, boolean loaded,
                            Throwable t) {
                        System.err.println("strata-hook: instrument " + typeName + ": " + t);
                    }
                })
                .type(named(MEMORY_STORE))
                .transform(advise(Advices.Put.class, named("putBytes").or(named("putIteratorAsValues"))
                        .or(named("putIteratorAsBytes")).and(not(isStatic()))))
                .transform(advise(Advices.Read.class, named("getBytes").or(named("getValues"))
                        .and(takesArguments(1))))
                .transform(advise(Advices.Remove.class, named("remove").and(takesArguments(1))))
                .transform(advise(Advices.Evict.class, named("evictBlocksToFreeSpace")))
                .transform(advise(Advices.Clear.class, named("clear").and(takesArguments(0))))
                .type(named(TASK_MEMORY_MANAGER))
                .transform(advise(Advices.Allocate.class, named("allocatePage").or(named("allocatePageInternal"))))
                .transform(advise(Advices.FreePage.class, named("freePage")))
                .transform(advise(Advices.Cleanup.class, named("cleanUpAllAllocatedMemory")))
                .type(named(RDD))
                .transform(advise(Advices.RddIterator.class, named("iterator").and(takesArguments(2))))
                .makeRaw();
        inst.addTransformer(new ByName(Set.of(MEMORY_STORE, TASK_MEMORY_MANAGER, RDD), bb), false);
    }

    /**
     * Hands Byte Buddy only the classes it instruments. The JVM calls every
     * transformer for every class it loads; Byte Buddy's own matching (a
     * type pool, a class file locator, its ignore rules) cost a Spark driver
     * about 1.2 s of CPU more at start-up than this name check
     * (BenchmarkCachingJob's set-up, measured both ways).
     */
    static final class ByName implements ClassFileTransformer {
        private final Set<String> internalNames = new HashSet<>();
        private final ClassFileTransformer delegate;

        ByName(Set<String> classNames, ClassFileTransformer delegate) {
            for (String n : classNames) {
                internalNames.add(n.replace('.', '/'));
            }
            this.delegate = delegate;
        }

        @Override
        public byte[] transform(Module module, ClassLoader loader, String name, Class<?> redefined,
                ProtectionDomain domain, byte[] classfile) throws IllegalClassFormatException {
            if (name == null || !internalNames.contains(name)) {
                return null;
            }
            return delegate.transform(module, loader, name, redefined, domain, classfile);
        }

        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain,
                byte[] classfile) throws IllegalClassFormatException {
            if (name == null || !internalNames.contains(name)) {
                return null;
            }
            return delegate.transform(loader, name, redefined, domain, classfile);
        }
    }
}
