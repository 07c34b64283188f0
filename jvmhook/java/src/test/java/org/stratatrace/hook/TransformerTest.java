package org.stratatrace.hook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.FutureTask;

import org.junit.jupiter.api.Test;

/**
 * The transformer leaves the JVM's class loading alone once it has seen
 * each class it weaves: it removes itself then, and only then.
 */
class TransformerTest {
    @Test
    void removesItselfOnceEveryWovenClassIsDefined() throws IOException {
        List<Object> removed = new ArrayList<>();
        Instrumentation inst = (Instrumentation) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {Instrumentation.class}, (proxy, method, args) -> {
                    if (!method.getName().equals("removeTransformer")) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    removed.add(args[0]);
                    return true;
                });
        FutureTask<Map<String, byte[][]>> prepared = new FutureTask<>(Map::of);
        prepared.run();
        Agent.Transformer t = new Agent.Transformer(new Agent.Woven(prepared), inst);
        byte[] plain = classBytes(); // has no method of a woven shape: loads unchanged

        assertNull(t.transform(null, "java/lang/String", null, null, plain));
        assertNull(t.transform(null, Weaver.RDD, null, null, plain));
        assertNull(t.transform(null, Weaver.RDD, null, null, plain)); // again, as a second loader would
        assertNull(t.transform(null, Weaver.MEMORY_STORE, null, null, plain));
        assertEquals(List.of(), removed, "removed before TaskMemoryManager was defined");

        assertNull(t.transform(null, Weaver.TASK_MEMORY_MANAGER, null, null, plain));
        assertEquals(1, removed.size(), "removals after the last woven class");
        assertSame(t, removed.get(0));

        assertNull(t.transform(null, Weaver.MEMORY_STORE, null, null, plain));
        assertEquals(1, removed.size(), "removed twice");
    }

    private byte[] classBytes() throws IOException {
        try (InputStream in = getClass().getResourceAsStream("TransformerTest.class")) {
            return in.readAllBytes();
        }
    }
}
