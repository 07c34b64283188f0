package org.stratatrace.hook;

import java.util.List;
import java.util.Map;
import java.util.Set;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.FrameNode;
import org.objectweb.asm.tree.InsnList;
import org.objectweb.asm.tree.InsnNode;
import org.objectweb.asm.tree.LabelNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.TryCatchBlockNode;
import org.objectweb.asm.tree.VarInsnNode;

/**
 * Weaves calls to {@link Blocks} into Spark's MemoryStore, TaskMemoryManager
 * and RDD with ASM. Each call only passes {@code this}, the first argument or
 * the returned value to a static method of Blocks, which catches everything
 * itself, so the woven code has no branch of its own: no stack map frame is
 * computed and no class other than the one woven is looked at (nor loaded).
 * The one exception is MemoryStore.evictBlocksToFreeSpace, whose exit is also
 * wanted when it throws: its body is covered by a catch-all handler, last in
 * the exception table, that calls Blocks.evictExit and rethrows; the
 * handler's frame declares no locals, which every frame of the body
 * satisfies.
 *
 * <pre>
 * MemoryStore.putBytes, putIteratorAsValues,
 *   putIteratorAsBytes (any arguments)      on return   Blocks.put(this, arg0)
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
 * Only instance methods are woven, and only where the argument or return
 * value passed is a reference; a method of another shape is left alone.
 */
final class Weaver {
    private Weaver() {}

    static final String MEMORY_STORE = "org/apache/spark/storage/memory/MemoryStore";
    static final String TASK_MEMORY_MANAGER = "org/apache/spark/memory/TaskMemoryManager";
    static final String RDD = "org/apache/spark/rdd/RDD";
    private static final String BLOCKS = "org/stratatrace/hook/Blocks";

    /** What is passed to a Blocks method. */
    enum Pass { NOTHING, THIS, ARG0, THIS_ARG0, THIS_RETURNED }

    /**
     * One woven method: its name, its argument count (-1: any), the methods
     * called on entry and on return (null: none), what they are passed, and
     * whether the exit method is also called when the method throws.
     */
    record Site(String method, int args, String enter, String exit, Pass pass, boolean onThrow) {}

    private static final Map<String, List<Site>> SITES = Map.of(
            MEMORY_STORE, List.of(
                    new Site("putBytes", -1, null, "put", Pass.THIS_ARG0, false),
                    new Site("putIteratorAsValues", -1, null, "put", Pass.THIS_ARG0, false),
                    new Site("putIteratorAsBytes", -1, null, "put", Pass.THIS_ARG0, false),
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

    /** The class file with calls to static methods of owner woven into its sites; null if none. */
    static byte[] weave(byte[] classfile, List<Site> sites, String owner) {
        ClassReader reader = new ClassReader(classfile);
        // Given the reader, the writer copies the methods left alone byte for byte.
        ClassWriter writer = new ClassWriter(reader, 0);
        int[] woven = new int[1];
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                MethodVisitor out = super.visitMethod(access, name, desc, signature, exceptions);
                Site site = match(sites, access, name, desc);
                if (site == null || out == null) {
                    return out;
                }
                woven[0]++;
                return new MethodNode(Opcodes.ASM9, access, name, desc, signature, exceptions) {
                    @Override
                    public void visitEnd() {
                        weave(this, site, owner);
                        accept(out);
                    }
                };
            }
        }, 0);
        return woven[0] == 0 ? null : writer.toByteArray();
    }

    /** The site of a method, if it is one of ours and of the shape its calls need. */
    private static Site match(List<Site> sites, int access, String name, String desc) {
        if ((access & (Opcodes.ACC_STATIC | Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_BRIDGE)) != 0) {
            return null;
        }
        Type[] args = Type.getArgumentTypes(desc);
        for (Site s : sites) {
            if (!s.method.equals(name) || (s.args >= 0 && s.args != args.length)) {
                continue;
            }
            boolean arg0 = s.pass == Pass.ARG0 || s.pass == Pass.THIS_ARG0;
            if (arg0 && (args.length == 0 || !isReference(args[0]))) {
                return null;
            }
            if (s.pass == Pass.THIS_RETURNED && !isReference(Type.getReturnType(desc))) {
                return null;
            }
            return s;
        }
        return null;
    }

    private static boolean isReference(Type t) {
        return t.getSort() == Type.OBJECT || t.getSort() == Type.ARRAY;
    }

    private static void weave(MethodNode m, Site s, String owner) {
        InsnList code = m.instructions;
        if (code.size() == 0) {
            return;
        }
        if (s.exit != null) {
            for (AbstractInsnNode insn = code.getFirst(); insn != null; insn = insn.getNext()) {
                int op = insn.getOpcode();
                if (op >= Opcodes.IRETURN && op <= Opcodes.RETURN) {
                    code.insertBefore(insn, call(owner, s.exit, s.pass));
                }
            }
        }
        if (s.onThrow) {
            // The whole body, after the entry call inserted below; a body
            // always ends in a return, throw or goto, so nothing falls into
            // the handler.
            LabelNode start = new LabelNode();
            LabelNode end = new LabelNode();
            LabelNode handler = new LabelNode();
            code.insert(start);
            code.add(end);
            code.add(handler);
            code.add(new FrameNode(Opcodes.F_FULL, 0, new Object[0], 1, new Object[] {"java/lang/Throwable"}));
            code.add(new MethodInsnNode(Opcodes.INVOKESTATIC, owner, s.exit, "()V", false));
            code.add(new InsnNode(Opcodes.ATHROW));
            m.tryCatchBlocks.add(new TryCatchBlockNode(start, end, handler, null));
        }
        if (s.enter != null) {
            code.insert(call(owner, s.enter, s.pass));
        }
        m.maxStack += 3; // at most: the returned value twice and this
    }

    /** The call to owner.method with what pass says, stack unchanged after it. */
    private static InsnList call(String owner, String method, Pass pass) {
        InsnList l = new InsnList();
        String desc;
        switch (pass) {
            case THIS -> {
                l.add(new VarInsnNode(Opcodes.ALOAD, 0));
                desc = "(Ljava/lang/Object;)V";
            }
            case ARG0 -> {
                l.add(new VarInsnNode(Opcodes.ALOAD, 1));
                desc = "(Ljava/lang/Object;)V";
            }
            case THIS_ARG0 -> {
                l.add(new VarInsnNode(Opcodes.ALOAD, 0));
                l.add(new VarInsnNode(Opcodes.ALOAD, 1));
                desc = "(Ljava/lang/Object;Ljava/lang/Object;)V";
            }
            case THIS_RETURNED -> {
                // stack: returned -> returned returned this -> returned this returned
                l.add(new InsnNode(Opcodes.DUP));
                l.add(new VarInsnNode(Opcodes.ALOAD, 0));
                l.add(new InsnNode(Opcodes.SWAP));
                desc = "(Ljava/lang/Object;Ljava/lang/Object;)V";
            }
            default -> desc = "()V";
        }
        l.add(new MethodInsnNode(Opcodes.INVOKESTATIC, owner, method, desc, false));
        return l;
    }
}
