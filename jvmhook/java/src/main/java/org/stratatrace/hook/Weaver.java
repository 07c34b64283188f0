package org.stratatrace.hook;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Weaves calls to {@link Blocks} into Spark's MemoryStore, TaskMemoryManager
 * and RDD by editing their class files, with no bytecode library: the JVM
 * loads none, and weaving Spark's three classes takes a few milliseconds
 * where ASM took tens plus its JIT compilations.
 *
 * <p>No byte of an original method's code changes. Each woven method is
 * renamed {@code strata$NAME} and made private and synthetic; a new method
 * with its name, descriptor and access takes its place and, in a straight
 * line: calls the enter method of Blocks, calls the renamed method
 * (invokespecial: no virtual dispatch), calls the exit method when it
 * returns, and returns what it returned. So no offset, stack map frame,
 * switch padding or exception range of Spark's code is touched, and every
 * caller, inside the class or out, goes through the new method. The class
 * gains constant pool entries (appended) and one method per woven one
 * (appended); its fields and attributes are copied. Each call only passes
 * {@code this}, the first argument or the returned value to a static method
 * of Blocks, which catches everything itself. The exceptions are
 * MemoryStore's puts and evictBlocksToFreeSpace, whose exit is also wanted
 * when they throw: the renamed call is covered by a catch-all handler that
 * calls the exit method with no argument (Blocks.put(), Blocks.evictExit)
 * and rethrows, with the one stack map frame that needs (the method's
 * locals as at entry, the Throwable on the stack).
 *
 * <pre>
 * MemoryStore.putBytes, putIteratorAsValues,
 *   putIteratorAsBytes (any arguments)      on entry    Blocks.fillBegin(this, arg0)
 *                                           on return   Blocks.put(this, arg0)
 *                                           on throw    Blocks.put()
 * MemoryStore.getBytes, getValues (1 arg)   on return   Blocks.read(arg0)
 * MemoryStore.remove (1 arg)                on entry    Blocks.remove(arg0)
 * MemoryStore.evictBlocksToFreeSpace        on entry    Blocks.evictEnter()
 *                                           on return or throw  Blocks.evictExit()
 * MemoryStore.clear (no args)               on entry    Blocks.clear()
 * TaskMemoryManager.allocatePage,
 *   allocatePageInternal (4.x)              on return   Blocks.allocated(this, returned)
 * TaskMemoryManager.freePage                on entry    Blocks.freePage(arg0)
 * TaskMemoryManager.cleanUpAllAllocatedMemory on entry  Blocks.cleanup(this)
 * RDD.iterator (2 args)                     on entry    Blocks.rddIterator(this)
 * </pre>
 * Only instance methods of classes are woven, and only where the argument or
 * return value passed is a reference; a method of another shape is left
 * alone, and so is a class that already has a {@code strata$} method (woven
 * once already).
 */
final class Weaver {
    private Weaver() {}

    static final String MEMORY_STORE = "org/apache/spark/storage/memory/MemoryStore";
    static final String TASK_MEMORY_MANAGER = "org/apache/spark/memory/TaskMemoryManager";
    static final String RDD = "org/apache/spark/rdd/RDD";
    private static final String BLOCKS = "org/stratatrace/hook/Blocks";
    private static final String RENAMED = "strata$";

    /** What is passed to a Blocks method. */
    enum Pass { NOTHING, THIS, ARG0, THIS_ARG0, THIS_RETURNED }

    /**
     * One woven method: its name, its argument count (-1: any), the methods
     * called on entry and on return (null: none), what they are passed, and
     * whether the exit method is also called, with no argument, when the
     * method throws.
     */
    static final class Site {
        final String method;
        final int args;
        final String enter, exit;
        final Pass pass;
        final boolean onThrow;

        Site(String method, int args, String enter, String exit, Pass pass, boolean onThrow) {
            this.method = method;
            this.args = args;
            this.enter = enter;
            this.exit = exit;
            this.pass = pass;
            this.onThrow = onThrow;
        }
    }

    private static final Map<String, List<Site>> SITES = Map.of(
            MEMORY_STORE, List.of(
                    new Site("putBytes", -1, "fillBegin", "put", Pass.THIS_ARG0, true),
                    new Site("putIteratorAsValues", -1, "fillBegin", "put", Pass.THIS_ARG0, true),
                    new Site("putIteratorAsBytes", -1, "fillBegin", "put", Pass.THIS_ARG0, true),
                    new Site("getBytes", 1, null, "read", Pass.ARG0, false),
                    new Site("getValues", 1, null, "read", Pass.ARG0, false),
                    new Site("remove", 1, "remove", null, Pass.ARG0, false),
                    new Site("evictBlocksToFreeSpace", -1, "evictEnter", "evictExit", Pass.NOTHING, true),
                    new Site("clear", 0, "clear", null, Pass.NOTHING, false)),
            TASK_MEMORY_MANAGER, List.of(
                    new Site("allocatePage", -1, null, "allocated", Pass.THIS_RETURNED, false),
                    new Site("allocatePageInternal", -1, null, "allocated", Pass.THIS_RETURNED, false),
                    new Site("freePage", -1, "freePage", null, Pass.ARG0, false),
                    new Site("cleanUpAllAllocatedMemory", 0, "cleanup", null, Pass.THIS, false)),
            RDD, List.of(
                    new Site("iterator", 2, "rddIterator", null, Pass.THIS, false)));

    /** Whether classes of this internal name are woven. */
    static boolean wants(String internalName) {
        return SITES.containsKey(internalName);
    }

    /** The internal names of the classes woven. */
    static Set<String> classes() {
        return SITES.keySet();
    }

    /**
     * The class file with the calls woven in, or null when none of its
     * methods is of a shape woven (the class then loads unchanged).
     */
    static byte[] weave(String internalName, byte[] classfile) {
        List<Site> sites = SITES.get(internalName);
        return sites == null ? null : weave(classfile, sites, BLOCKS);
    }

    /**
     * The class file with calls to static methods of owner woven into its
     * sites; null if none. A class file it cannot read throws
     * IllegalArgumentException.
     */
    static byte[] weave(byte[] classfile, List<Site> sites, String owner) {
        try {
            return new ClassFile(classfile).weave(sites, owner);
        } catch (IndexOutOfBoundsException e) {
            throw new IllegalArgumentException("truncated class file", e);
        }
    }

    // Access flags and opcodes used.
    private static final int ACC_PUBLIC = 0x0001, ACC_PRIVATE = 0x0002, ACC_PROTECTED = 0x0004,
            ACC_STATIC = 0x0008, ACC_SYNCHRONIZED = 0x0020, ACC_BRIDGE = 0x0040, ACC_NATIVE = 0x0100,
            ACC_INTERFACE = 0x0200, ACC_ABSTRACT = 0x0400, ACC_SYNTHETIC = 0x1000;
    private static final int ILOAD = 0x15, LLOAD = 0x16, FLOAD = 0x17, DLOAD = 0x18, ALOAD = 0x19,
            ALOAD_0 = 0x2a, ALOAD_1 = 0x2b, DUP = 0x59, SWAP = 0x5f, IRETURN = 0xac, LRETURN = 0xad,
            FRETURN = 0xae, DRETURN = 0xaf, ARETURN = 0xb0, RETURN = 0xb1, INVOKESPECIAL = 0xb7,
            INVOKESTATIC = 0xb8, ATHROW = 0xbf;
    private static final int CONSTANT_UTF8 = 1, CONSTANT_CLASS = 7, CONSTANT_METHODREF = 10,
            CONSTANT_NAME_AND_TYPE = 12;
    /** The first class file version whose verifier wants stack map frames (Java 6). */
    private static final int STACK_MAP_VERSION = 50;

    /**
     * A method descriptor reduced to what the new method needs: one letter
     * per argument and for the return, I for int, boolean, byte, char and
     * short, J, F, D, L for any reference (arrays too), V for void.
     */
    static final class Descriptor {
        final char[] args;
        final char ret;

        Descriptor(char[] args, char ret) {
            this.args = args;
            this.ret = ret;
        }

        static Descriptor parse(byte[] b, int from, int to) {
            // Modified UTF-8 puts no byte below 0x80 inside a multi-byte
            // character, so the ASCII delimiters can be looked for byte by byte.
            char[] args = new char[to - from];
            int n = 0, i = from;
            if (i >= to || b[i++] != '(') {
                throw new IllegalArgumentException("bad method descriptor");
            }
            while (i < to && b[i] != ')') {
                char k = kind(b[i]);
                while (b[i] == '[') {
                    i++;
                }
                if (b[i] == 'L') {
                    while (b[i] != ';') {
                        i++;
                    }
                } else if (kind(b[i]) == 'V') {
                    throw new IllegalArgumentException("bad method descriptor");
                }
                i++;
                args[n++] = k;
            }
            char ret = kind(b[++i]);
            while (b[i] == '[') {
                i++;
            }
            if (b[i] == 'L') {
                while (b[i] != ';') {
                    i++;
                }
            }
            if (i + 1 != to) {
                throw new IllegalArgumentException("bad method descriptor");
            }
            return new Descriptor(Arrays.copyOf(args, n), ret);
        }

        private static char kind(byte c) {
            switch (c) {
                case 'Z': case 'B': case 'C': case 'S': case 'I':
                    return 'I';
                case 'J': case 'F': case 'D': case 'V':
                    return (char) c;
                case 'L': case '[':
                    return 'L';
                default:
                    throw new IllegalArgumentException("bad method descriptor");
            }
        }

        /** The local variable slots the arguments take after this. */
        int slots() {
            int n = 0;
            for (char a : args) {
                n += size(a);
            }
            return n;
        }

        /** The slots (or stack entries) a value of this kind takes: 0 for V. */
        static int size(char kind) {
            return kind == 'V' ? 0 : kind == 'J' || kind == 'D' ? 2 : 1;
        }
    }

    /** One class file, read far enough to weave it. */
    private static final class ClassFile {
        private final byte[] b;
        private int p;
        private final int major, poolCount, poolEnd, thisClass, methodsAt, attributesAt;
        private final int[] entry;        // offset of each constant pool entry's tag
        private final int[][] methods;    // start, access, name, descriptor, end

        ClassFile(byte[] b) {
            this.b = b;
            if (u4() != 0xCAFEBABE) {
                throw new IllegalArgumentException("not a class file");
            }
            u2();
            major = u2();
            poolCount = u2();
            entry = new int[poolCount];
            for (int i = 1; i < poolCount; i++) {
                entry[i] = p;
                int tag = u1();
                switch (tag) {
                    case 1: {                                   // Utf8 (p += u2() would add to p's old value)
                        int len = u2();
                        p += len;
                        break;
                    }
                    case 3: case 4:                             // Integer, Float
                        p += 4;
                        break;
                    case 5: case 6:                             // Long, Double: two entries
                        p += 8;
                        i++;
                        break;
                    case 7: case 8: case 16: case 19: case 20:  // Class, String, MethodType, Module, Package
                        p += 2;
                        break;
                    case 9: case 10: case 11: case 12: case 17: case 18: // refs, NameAndType, (Invoke)Dynamic
                        p += 4;
                        break;
                    case 15:                                    // MethodHandle
                        p += 3;
                        break;
                    default:
                        throw new IllegalArgumentException("constant " + i + ": unknown tag " + tag);
                }
            }
            poolEnd = p;
            int access = u2();
            thisClass = (access & ACC_INTERFACE) != 0 ? 0 : u2();
            if (thisClass == 0) {
                methodsAt = attributesAt = p;
                methods = new int[0][];
                return;
            }
            p += 2;                                             // super_class
            int interfaces = u2();
            p += 2 * interfaces;
            skipMembers();                                      // fields
            methodsAt = p;
            methods = new int[u2()][];
            for (int i = 0; i < methods.length; i++) {
                int start = p, acc = u2(), name = u2(), desc = u2();
                skipAttributes();
                methods[i] = new int[] {start, acc, name, desc, p};
            }
            attributesAt = p;
            skipAttributes();
            if (p != b.length) {
                throw new IllegalArgumentException("extra bytes after the class attributes");
            }
        }

        private int u1() {
            return b[p++] & 0xff;
        }

        private int u2() {
            int v = (b[p] & 0xff) << 8 | (b[p + 1] & 0xff);
            p += 2;
            return v;
        }

        private int u4() {
            int v = u2() << 16;
            return v | u2();
        }

        private void skipMembers() {
            for (int n = u2(); n > 0; n--) {
                p += 6;
                skipAttributes();
            }
        }

        private void skipAttributes() {
            for (int n = u2(); n > 0; n--) {
                p += 2;
                int len = u4();
                if (len < 0 || len > b.length - p) {
                    throw new IllegalArgumentException("attribute longer than the class file");
                }
                p += len;
            }
        }

        /** Whether constant i is the Utf8 s (ASCII). */
        private boolean utf8Is(int i, String s) {
            return utf8Has(i, s, true);
        }

        private boolean utf8StartsWith(int i, String prefix) {
            return utf8Has(i, prefix, false);
        }

        /** Whether constant i is a Utf8 that is s, or starts with it (ASCII). */
        private boolean utf8Has(int i, String s, boolean whole) {
            if (i <= 0 || i >= poolCount || b[entry[i]] != CONSTANT_UTF8) {
                return false;
            }
            int at = entry[i], len = (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff);
            if (whole ? len != s.length() : len < s.length()) {
                return false;
            }
            for (int k = 0; k < s.length(); k++) {
                if (b[at + 3 + k] != s.charAt(k)) {
                    return false;
                }
            }
            return true;
        }

        private Descriptor descriptor(int i) {
            if (i <= 0 || i >= poolCount || b[entry[i]] != CONSTANT_UTF8) {
                throw new IllegalArgumentException("method descriptor is not a Utf8 constant");
            }
            int at = entry[i], len = (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff);
            return Descriptor.parse(b, at + 3, at + 3 + len);
        }

        /** The site of a method, if it is one of ours and of the shape its calls need. */
        private Site match(List<Site> sites, int[] m) {
            if ((m[1] & (ACC_STATIC | ACC_ABSTRACT | ACC_NATIVE | ACC_BRIDGE)) != 0) {
                return null;
            }
            for (Site s : sites) {
                if (!utf8Is(m[2], s.method)) {
                    continue;
                }
                Descriptor d = descriptor(m[3]);
                if (s.args >= 0 && s.args != d.args.length) {
                    continue;
                }
                boolean arg0 = s.pass == Pass.ARG0 || s.pass == Pass.THIS_ARG0;
                if (arg0 && (d.args.length == 0 || d.args[0] != 'L')) {
                    return null;
                }
                if (s.pass == Pass.THIS_RETURNED && d.ret != 'L') {
                    return null;
                }
                return s;
            }
            return null;
        }

        byte[] weave(List<Site> sites, String owner) {
            Site[] woven = new Site[methods.length];
            int count = 0;
            for (int i = 0; i < methods.length; i++) {
                if (utf8StartsWith(methods[i][2], RENAMED)) {
                    return null; // woven before
                }
                if ((woven[i] = match(sites, methods[i])) != null) {
                    count++;
                }
            }
            if (count == 0) {
                return null;
            }
            Pool pool = new Pool(this);
            int ownerClass = pool.classRef(owner);
            Bytes added = new Bytes(256 * count);
            int[] renamed = new int[methods.length];
            for (int i = 0; i < methods.length; i++) {
                if (woven[i] != null) {
                    renamed[i] = pool.utf8(RENAMED + woven[i].method);
                    method(added, pool, woven[i], methods[i], ownerClass);
                }
            }
            // Every constant is in the pool from here on.
            Bytes out = new Bytes(b.length + pool.bytes.size() + added.size() + 16);
            out.put(b, 0, 8);                                   // magic, version
            out.u2(pool.count());
            out.put(b, 10, poolEnd - 10);
            out.put(pool.bytes);
            out.put(b, poolEnd, methodsAt - poolEnd);           // access .. fields
            out.u2(methods.length + count);
            for (int i = 0; i < methods.length; i++) {
                int[] m = methods[i];
                if (woven[i] == null) {
                    out.put(b, m[0], m[4] - m[0]);
                    continue;
                }
                out.u2(m[1] & ~(ACC_PUBLIC | ACC_PROTECTED) | ACC_PRIVATE | ACC_SYNTHETIC);
                out.u2(renamed[i]);
                out.put(b, m[0] + 4, m[4] - m[0] - 4);          // descriptor, attributes
            }
            out.put(added);
            out.put(b, attributesAt, b.length - attributesAt);
            return out.toArray();
        }

        /** Appends the method that takes m's place: calls, in a straight line. */
        private void method(Bytes out, Pool pool, Site s, int[] m, int ownerClass) {
            Descriptor d = descriptor(m[3]);
            int renamed = pool.methodRef(thisClass, RENAMED + s.method, m[3]);
            Bytes code = new Bytes(64);
            if (s.enter != null) {
                if (s.pass == Pass.THIS_RETURNED) {
                    throw new IllegalArgumentException(s.method + ": nothing is returned on entry");
                }
                pass(code, s.pass);
                code.u1(INVOKESTATIC).u2(pool.methodRef(ownerClass, s.enter, pool.utf8(descriptorOf(s.pass))));
            }
            int start = code.size();
            code.u1(ALOAD_0);
            int slot = 1;
            for (char a : d.args) {
                code.u1(a == 'I' ? ILOAD : a == 'J' ? LLOAD : a == 'F' ? FLOAD : a == 'D' ? DLOAD : ALOAD).u1(slot);
                slot += Descriptor.size(a);
            }
            code.u1(INVOKESPECIAL).u2(renamed);
            int end = code.size();
            if (s.exit != null) {
                if (s.pass == Pass.THIS_RETURNED) {
                    code.u1(DUP).u1(ALOAD_0).u1(SWAP);          // returned this returned
                } else {
                    pass(code, s.pass);
                }
                code.u1(INVOKESTATIC).u2(pool.methodRef(ownerClass, s.exit, pool.utf8(descriptorOf(s.pass))));
            }
            char r = d.ret;
            code.u1(r == 'I' ? IRETURN : r == 'J' ? LRETURN : r == 'F' ? FRETURN : r == 'D' ? DRETURN
                    : r == 'V' ? RETURN : ARETURN);
            int handler = -1;
            if (s.onThrow) {
                handler = code.size();
                code.u1(INVOKESTATIC).u2(pool.methodRef(ownerClass, s.exit, pool.utf8("()V"))).u1(ATHROW);
            }
            int ret = Descriptor.size(d.ret);
            int maxStack = Math.max(1 + d.slots(), Math.max(width(s.pass), ret + (s.exit == null ? 0
                    : s.pass == Pass.THIS_RETURNED ? 2 : width(s.pass))));
            Bytes frames = null;
            if (handler >= 0 && major >= STACK_MAP_VERSION) {
                // The method's locals as at entry (an implicit frame), the
                // Throwable on the stack.
                frames = new Bytes(8);
                frames.u2(1);
                if (handler <= 63) {
                    frames.u1(64 + handler);                    // same_locals_1_stack_item_frame
                } else {
                    frames.u1(247).u2(handler);                 // ..._extended
                }
                frames.u1(7).u2(pool.classRef("java/lang/Throwable"));
            }
            int attrs = 2 + 2 + 4 + code.size() + 2 + (handler >= 0 ? 8 : 0) + 2
                    + (frames != null ? 6 + frames.size() : 0);
            out.u2(m[1] & ~ACC_SYNCHRONIZED).u2(m[2]).u2(m[3]).u2(1);
            out.u2(pool.utf8("Code")).u4(attrs);
            out.u2(maxStack).u2(1 + d.slots()).u4(code.size()).put(code);
            if (handler >= 0) {
                out.u2(1).u2(start).u2(end).u2(handler).u2(0); // catch any
            } else {
                out.u2(0);
            }
            if (frames != null) {
                out.u2(1).u2(pool.utf8("StackMapTable")).u4(frames.size()).put(frames);
            } else {
                out.u2(0);
            }
        }

        private static void pass(Bytes code, Pass p) {
            switch (p) {
                case THIS:
                    code.u1(ALOAD_0);
                    break;
                case ARG0:
                    code.u1(ALOAD_1);
                    break;
                case THIS_ARG0:
                    code.u1(ALOAD_0).u1(ALOAD_1);
                    break;
                default:
                    break;
            }
        }

        private static int width(Pass p) {
            switch (p) {
                case NOTHING:
                    return 0;
                case THIS: case ARG0:
                    return 1;
                default:
                    return 2;                                   // THIS_ARG0, THIS_RETURNED
            }
        }

        private static String descriptorOf(Pass p) {
            switch (p) {
                case NOTHING:
                    return "()V";
                case THIS: case ARG0:
                    return "(Ljava/lang/Object;)V";
                default:
                    return "(Ljava/lang/Object;Ljava/lang/Object;)V"; // THIS_ARG0, THIS_RETURNED
            }
        }
    }

    /**
     * The constants a weave adds, after the class's own: each added once,
     * an existing Utf8 or Class of the same text reused.
     */
    private static final class Pool {
        final ClassFile cf;
        final Bytes bytes = new Bytes(512);
        final Map<String, Integer> added = new HashMap<>();
        int next;

        Pool(ClassFile cf) {
            this.cf = cf;
            this.next = cf.poolCount;
        }

        int count() {
            if (next > 0xffff) {
                throw new IllegalArgumentException("constant pool full");
            }
            return next;
        }

        int utf8(String s) {
            Integer i = added.get("U" + s);
            if (i != null) {
                return i;
            }
            for (int k = 1; k < cf.poolCount; k++) {
                if (cf.utf8Is(k, s)) {
                    added.put("U" + s, k);
                    return k;
                }
            }
            byte[] text = s.getBytes(StandardCharsets.US_ASCII);
            bytes.u1(CONSTANT_UTF8).u2(text.length).put(text, 0, text.length);
            return add("U" + s);
        }

        int classRef(String name) {
            Integer i = added.get("C" + name);
            if (i != null) {
                return i;
            }
            int n = utf8(name);
            for (int k = 1; k < cf.poolCount; k++) {
                int at = cf.entry[k];
                if (cf.b[at] == CONSTANT_CLASS && ((cf.b[at + 1] & 0xff) << 8 | (cf.b[at + 2] & 0xff)) == n) {
                    added.put("C" + name, k);
                    return k;
                }
            }
            bytes.u1(CONSTANT_CLASS).u2(n);
            return add("C" + name);
        }

        /** A Methodref of a class, its descriptor the Utf8 constant desc. */
        int methodRef(int owner, String name, int desc) {
            String key = "M" + owner + " " + name + " " + desc;
            Integer i = added.get(key);
            if (i != null) {
                return i;
            }
            int n = utf8(name);
            bytes.u1(CONSTANT_NAME_AND_TYPE).u2(n).u2(desc);
            int nat = next++;
            bytes.u1(CONSTANT_METHODREF).u2(owner).u2(nat);
            return add(key);
        }

        private int add(String key) {
            added.put(key, next);
            return next++;
        }
    }

    /** A growing byte array, big-endian. */
    private static final class Bytes {
        private byte[] a;
        private int n;

        Bytes(int capacity) {
            a = new byte[capacity];
        }

        int size() {
            return n;
        }

        private void room(int k) {
            if (n + k > a.length) {
                a = Arrays.copyOf(a, Math.max(a.length * 2, n + k));
            }
        }

        Bytes u1(int v) {
            room(1);
            a[n++] = (byte) v;
            return this;
        }

        Bytes u2(int v) {
            room(2);
            a[n++] = (byte) (v >>> 8);
            a[n++] = (byte) v;
            return this;
        }

        Bytes u4(int v) {
            return u2(v >>> 16).u2(v & 0xffff);
        }

        Bytes put(byte[] src, int from, int len) {
            room(len);
            System.arraycopy(src, from, a, n, len);
            n += len;
            return this;
        }

        Bytes put(Bytes o) {
            return put(o.a, 0, o.n);
        }

        byte[] toArray() {
            return n == a.length ? a : Arrays.copyOf(a, n);
        }
    }
}
