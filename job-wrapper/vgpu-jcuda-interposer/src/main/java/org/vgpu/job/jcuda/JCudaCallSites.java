package org.vgpu.job.jcuda;

import java.lang.classfile.ClassBuilder;
import java.lang.classfile.ClassElement;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.ClassModel;
import java.lang.classfile.ClassTransform;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.CodeElement;
import java.lang.classfile.CodeModel;
import java.lang.classfile.MethodModel;
import java.lang.classfile.MethodTransform;
import java.lang.classfile.Opcode;
import java.lang.classfile.TypeKind;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDesc;
import java.lang.constant.ConstantDescs;
import java.lang.constant.DirectMethodHandleDesc;
import java.lang.constant.DynamicCallSiteDesc;
import java.lang.constant.DynamicConstantDesc;
import java.lang.constant.MethodHandleDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.vgpu.runtime.api.VirtualGpu;

/**
 * Rewrites a program's calls of JCuda's static API methods ({@code JCudaDriver}, {@code JCuda}, {@code JNvrtc}) into
 * calls of vgpu's shims with the same name and descriptor, as its classes load: the program is not changed on disk
 * and needs no vgpu type. Which classes are the program's: {@link ProgramClasses} (every class but JCuda's own, by its
 * code source, vgpu's and the JDK's).
 *
 * <p>A program's JCuda call never reaches JCuda itself unseen. A call site that cannot be redirected becomes code that
 * throws a {@code CudaException} naming the call and where it is made ({@link JCudaApi#unsupported}), when it runs,
 * the same with or without JCuda's exceptions enabled: a call no shim serves, a method reference or method handle
 * constant of one, an invokedynamic or dynamic constant that refers to JCuda's API in any other way, and reflection
 * on JCuda's API classes ({@code Method.invoke}, {@code MethodHandles.Lookup.findStatic}, {@code Lookup.unreflect} on
 * them: {@link #checkReflective}). A class whose rewriting fails (its stack maps cannot be computed, say) gets, in each
 * method that calls JCuda, a body that throws saying so; one that only reflects is left as it is.
 *
 * <p>Why call sites, not JCuda's classes: vgpu's own native backend drives the GPU through JCudaDriver, which must
 * stay JCuda's. Why the JDK's {@code java.lang.classfile}: it is part of Java 25, needs no bytecode library in the
 * interposer, and regenerates the stack maps of the methods it changes. Method references ({@code
 * JCudaDriver::cuMemAlloc}) and method handle constants of these calls are redirected like calls. Not seen: reflection
 * made by the JDK's own classes on the program's behalf (a {@code Method} handed to {@code java.beans}), and hidden
 * classes a program defines itself from bytes that call JCuda; README says so.
 */
public final class JCudaCallSites implements ClassFileTransformer {
    /** JCuda's API class, by internal name, and its shim. */
    static final Map<String, Class<?>> SHIMS = Map.of(
            "jcuda/driver/JCudaDriver", JCudaDriverShim.class,
            "jcuda/runtime/JCuda", JCudaRuntimeShim.class,
            "jcuda/nvrtc/JNvrtc", JNvrtcShim.class);

    /**
     * JCuda's bindings of CUDA's libraries (JCublas, JCublas2, JCufft, JCurand, JCusparse, JCusolverDn, JCudnn, ...):
     * a class named {@code J...} in a package {@code jcuda.j...}. vgpu serves none of them: their calls would reach the
     * node's libraries with addresses of the job's vGPUs, so a program's call of one throws instead, naming it.
     */
    private static final Pattern JCUDA_LIBRARY = Pattern.compile("jcuda/j[a-z0-9]+/J[A-Za-z0-9]*");

    /** What a class that calls JCuda or reflects names in its constants; one that names none of them is not parsed. */
    private static final List<byte[]> MARKS = Stream.of(
                    "jcuda/", "java/lang/reflect/Method", "java/lang/invoke/MethodHandles$Lookup")
            .map(mark -> mark.getBytes(StandardCharsets.US_ASCII))
            .toList();

    private static final ClassDesc CALL_SITES = ClassDesc.of(JCudaCallSites.class.getName());
    private static final MethodTypeDesc UNSUPPORTED_TYPE =
            MethodTypeDesc.of(ClassDesc.of(RuntimeException.class.getName()), ConstantDescs.CD_String);
    private static final ClassDesc METHOD = ClassDesc.of(Method.class.getName());
    private static final ClassDesc LOOKUP = ClassDesc.of(MethodHandles.Lookup.class.getName());
    private static final MethodTypeDesc CHECK_METHOD_TYPE =
            MethodTypeDesc.of(ConstantDescs.CD_void, METHOD, ConstantDescs.CD_String);
    private static final MethodTypeDesc CHECK_CLASS_TYPE = MethodTypeDesc.of(
            ConstantDescs.CD_void, ConstantDescs.CD_Class, ConstantDescs.CD_String, ConstantDescs.CD_String);
    private static final MethodTypeDesc INVOKE_TYPE =
            MethodTypeDesc.of(ConstantDescs.CD_Object, ConstantDescs.CD_Object, ConstantDescs.CD_Object.arrayType());
    private static final MethodTypeDesc FIND_STATIC_TYPE = MethodTypeDesc.of(
            ConstantDescs.CD_MethodHandle,
            ConstantDescs.CD_Class,
            ConstantDescs.CD_String,
            ConstantDescs.CD_MethodType);
    private static final MethodTypeDesc UNREFLECT_TYPE = MethodTypeDesc.of(ConstantDescs.CD_MethodHandle, METHOD);

    private final ProgramClasses programClasses = new ProgramClasses();

    /** "owner.name descriptor" of every call a shim serves. */
    private final Set<String> served = new HashSet<>();

    public JCudaCallSites() {
        SHIMS.forEach((owner, shim) -> {
            for (Method method : shim.getDeclaredMethods()) {
                if (Modifier.isPublic(method.getModifiers()) && Modifier.isStatic(method.getModifiers())) {
                    served.add(key(
                            owner,
                            method.getName(),
                            MethodType.methodType(method.getReturnType(), method.getParameterTypes())
                                    .toMethodDescriptorString()));
                }
            }
        });
    }

    /** Rewrites the classes that load from now on, their JCuda calls going to {@code vgpus} (device k is vGPU k). */
    public static void install(Instrumentation instrumentation, List<? extends VirtualGpu> vgpus) {
        JCudaSession.install(vgpus);
        instrumentation.addTransformer(new JCudaCallSites());
    }

    /** What the rewritten code of an unsupported call calls: the exception it then throws. */
    public static RuntimeException unsupported(String call) {
        return JCudaApi.unsupported(call);
    }

    /**
     * What the rewritten code of a program's {@code Method.invoke} and {@code Lookup.unreflect} calls first: it throws,
     * naming the method and {@code site}, where {@code method} is one of JCuda's API, whose calls would otherwise reach
     * JCuda itself.
     */
    public static void checkReflective(Method method, String site) {
        if (method != null) {
            checkReflective(method.getDeclaringClass(), method.getName(), site);
        }
    }

    /** What the rewritten code of a program's {@code Lookup.findStatic} calls first: as {@link #checkReflective(Method, String)}. */
    public static void checkReflective(Class<?> type, String name, String site) {
        if (type != null && SHIMS.containsKey(type.getName().replace('.', '/'))) {
            throw JCudaApi.unsupported(type.getName() + "." + name + " through reflection (" + site + ")");
        }
    }

    private static String key(String owner, String name, String descriptor) {
        return owner + "." + name + descriptor;
    }

    @Override
    public byte[] transform(
            ClassLoader loader,
            String className,
            Class<?> classBeingRedefined,
            ProtectionDomain protectionDomain,
            byte[] classfileBuffer) {
        if (className == null
                || !programClasses.isProgramClass(loader, className, protectionDomain)
                || !mentionsAny(classfileBuffer)) {
            return null;
        }
        try {
            return rewrite(classfileBuffer, loader);
        } catch (RuntimeException | LinkageError e) {
            // the JVM drops a transformer's exception silently and loads the class as it was, which would run JCuda
            // itself behind vgpu's back: the methods that call JCuda throw instead. A class that only reflects (a
            // library whose stack maps name an optional dependency that is absent, say) keeps its code: refusing its
            // reflection would break programs that never touch JCuda.
            return refuseJCudaCalls(classfileBuffer, className.replace('/', '.'), e);
        }
    }

    /** The class's bytes with its JCuda calls redirected; null when it has none. */
    byte[] rewrite(byte[] classfile, ClassLoader loader) {
        ClassFile files = ClassFile.of(ClassFile.ClassHierarchyResolverOption.of(
                ClassHierarchyResolver.defaultResolver().orElse(ClassHierarchyResolver.ofResourceParsing(loader))));
        ClassModel model = files.parse(classfile);
        String qualified = model.thisClass().asInternalName().replace('/', '.');
        boolean[] changed = {false};
        ClassTransform perMethod = (ClassBuilder type, ClassElement element) -> {
            if (element instanceof MethodModel method && method.code().isPresent()) {
                String site = qualified + "." + method.methodName().stringValue();
                type.transformMethod(method, MethodTransform.transformingCode((code, instruction) -> {
                    if (!redirect(code, instruction, site)) {
                        code.with(instruction);
                    } else {
                        changed[0] = true;
                    }
                }));
            } else {
                type.with(element);
            }
        };
        byte[] rewritten = files.transformClass(model, perMethod);
        return changed[0] ? rewritten : null;
    }

    /** Writes {@code element}'s redirection into {@code code} and says so, or says it has none. */
    private boolean redirect(CodeBuilder code, CodeElement element, String site) {
        switch (element) {
            case InvokeInstruction call
            when call.opcode() == Opcode.INVOKESTATIC
                    && SHIMS.containsKey(call.owner().asInternalName()) -> {
                redirect(code, call, site);
                return true;
            }
            case InvokeInstruction call
            when call.opcode() == Opcode.INVOKESTATIC && isJCudaLibrary(call) -> {
                dropOperands(code, call.typeSymbol());
                throwUnsupported(
                        code,
                        call.owner().asInternalName().replace('/', '.') + "."
                                + call.name().stringValue() + " (in " + site
                                + "; JCuda's bindings of CUDA's libraries do not run on vGPUs)");
                return true;
            }
            case InvokeInstruction call
            when isReflective(call, METHOD, "invoke", INVOKE_TYPE) -> {
                // the method lies under its receiver and arguments: those two wait in locals while it is checked
                int arguments = code.allocateLocal(TypeKind.REFERENCE);
                int target = code.allocateLocal(TypeKind.REFERENCE);
                code.astore(arguments).astore(target).dup().ldc("Method.invoke in " + site);
                code.invokestatic(CALL_SITES, "checkReflective", CHECK_METHOD_TYPE);
                code.aload(target).aload(arguments).with(call);
                return true;
            }
            case InvokeInstruction call
            when isReflective(call, LOOKUP, "findStatic", FIND_STATIC_TYPE) -> {
                int type = code.allocateLocal(TypeKind.REFERENCE);
                int name = code.allocateLocal(TypeKind.REFERENCE);
                code.astore(type).astore(name).dup().aload(name).ldc("Lookup.findStatic in " + site);
                code.invokestatic(CALL_SITES, "checkReflective", CHECK_CLASS_TYPE);
                code.aload(name).aload(type).with(call);
                return true;
            }
            case InvokeInstruction call
            when isReflective(call, LOOKUP, "unreflect", UNREFLECT_TYPE) -> {
                code.dup().ldc("Lookup.unreflect in " + site);
                code.invokestatic(CALL_SITES, "checkReflective", CHECK_METHOD_TYPE);
                code.with(call);
                return true;
            }
            case InvokeDynamicInstruction dynamic
            when referencesJCuda(dynamic) -> {
                redirect(code, dynamic, site);
                return true;
            }
            case ConstantInstruction.LoadConstantInstruction load
            when referencesJCuda(load.constantValue()) -> {
                redirect(code, load, site);
                return true;
            }
            default -> {
                return false;
            }
        }
    }

    private static boolean isJCudaLibrary(InvokeInstruction call) {
        return JCUDA_LIBRARY.matcher(call.owner().asInternalName()).matches();
    }

    private static boolean isReflective(InvokeInstruction call, ClassDesc owner, String name, MethodTypeDesc type) {
        return call.opcode() == Opcode.INVOKEVIRTUAL
                && call.owner().asSymbol().equals(owner)
                && call.name().equalsString(name)
                && call.typeSymbol().equals(type);
    }

    private void redirect(CodeBuilder code, InvokeInstruction call, String site) {
        ClassEntry owner = call.owner();
        String name = call.name().stringValue();
        MethodTypeDesc type = call.typeSymbol();
        Class<?> shim = SHIMS.get(owner.asInternalName());
        if (served.contains(key(owner.asInternalName(), name, call.type().stringValue()))) {
            code.invokestatic(ClassDesc.of(shim.getName()), name, type);
            return;
        }
        // the operands are dropped and the exception thrown; the call's own code after it is dead, which the
        // Class-File API patches (its default) so that the class verifies
        dropOperands(code, type);
        throwUnsupported(code, name + " (in " + site + ")");
    }

    /**
     * A method reference to a JCuda call ({@code JCudaDriver::cuMemAlloc}: an invokedynamic whose bootstrap arguments
     * hold a handle of the call) gets the shim's handle; one to a call no shim serves, or a call site that refers to
     * JCuda's API in another way (its bootstrap method, a dynamic constant among its arguments), becomes the throw at
     * the point the reference is made, so the program never holds a reference that would reach JCuda itself.
     */
    private void redirect(CodeBuilder code, InvokeDynamicInstruction site, String where) {
        List<ConstantDesc> arguments = new ArrayList<>();
        String refused = referencesJCuda(site.bootstrapMethod()) ? "an invokedynamic's bootstrap method" : null;
        for (ConstantDesc argument : site.bootstrapArgs()) {
            if (refused != null || !referencesJCuda(argument)) {
                arguments.add(argument);
            } else if (isJCudaHandle(argument) && shimHandle((DirectMethodHandleDesc) argument) != null) {
                arguments.add(shimHandle((DirectMethodHandleDesc) argument));
            } else {
                refused = isJCudaHandle(argument)
                        ? ((DirectMethodHandleDesc) argument).methodName()
                        : "an invokedynamic's constant " + argument;
            }
        }
        if (refused != null) {
            dropOperands(code, site.typeSymbol());
            throwUnsupported(code, refused + " (method reference in " + where + ")");
            return;
        }
        code.invokedynamic(DynamicCallSiteDesc.of(
                site.bootstrapMethod(),
                site.name().stringValue(),
                site.typeSymbol(),
                arguments.toArray(ConstantDesc[]::new)));
    }

    /** A JCuda call's method handle loaded as a constant gets the shim's; any other constant of JCuda's API, the throw. */
    private void redirect(CodeBuilder code, ConstantInstruction.LoadConstantInstruction load, String site) {
        ConstantDesc constant = load.constantValue();
        DirectMethodHandleDesc shim = isJCudaHandle(constant) ? shimHandle((DirectMethodHandleDesc) constant) : null;
        if (shim != null) {
            code.ldc(shim);
        } else if (isJCudaHandle(constant)) {
            throwUnsupported(
                    code, ((DirectMethodHandleDesc) constant).methodName() + " (method handle in " + site + ")");
        } else {
            throwUnsupported(code, "the constant " + constant + " (in " + site + ")");
        }
    }

    /** The shim's handle for a JCuda call's, or null when no shim serves the call. */
    private DirectMethodHandleDesc shimHandle(DirectMethodHandleDesc handle) {
        String owner = internalName(handle.owner());
        if (!served.contains(key(owner, handle.methodName(), handle.lookupDescriptor()))) {
            return null;
        }
        return MethodHandleDesc.ofMethod(
                DirectMethodHandleDesc.Kind.STATIC,
                ClassDesc.of(SHIMS.get(owner).getName()),
                handle.methodName(),
                handle.invocationType());
    }

    private static boolean referencesJCuda(InvokeDynamicInstruction site) {
        return referencesJCuda(site.bootstrapMethod())
                || site.bootstrapArgs().stream().anyMatch(JCudaCallSites::referencesJCuda);
    }

    /** Whether {@code constant} is, or is built from, a handle of a method of JCuda's API classes. */
    private static boolean referencesJCuda(ConstantDesc constant) {
        return switch (constant) {
            case DirectMethodHandleDesc handle ->
                SHIMS.containsKey(internalName(handle.owner()))
                        && handle.kind() != DirectMethodHandleDesc.Kind.STATIC_GETTER;
            case DynamicConstantDesc<?> dynamic ->
                referencesJCuda(dynamic.bootstrapMethod())
                        || Stream.of(dynamic.bootstrapArgs()).anyMatch(JCudaCallSites::referencesJCuda);
            default -> false;
        };
    }

    /** Whether {@code constant} is a handle of a static method of JCuda's API classes. */
    private static boolean isJCudaHandle(ConstantDesc constant) {
        return constant instanceof DirectMethodHandleDesc handle
                && handle.kind() == DirectMethodHandleDesc.Kind.STATIC
                && SHIMS.containsKey(internalName(handle.owner()));
    }

    private static String internalName(ClassDesc type) {
        String descriptor = type.descriptorString();
        return descriptor.startsWith("L") ? descriptor.substring(1, descriptor.length() - 1) : descriptor;
    }

    /**
     * The class with every method that calls JCuda given a body that throws, naming the class, the method and why its
     * calls could not be redirected; the other methods are copied as they are. Null where no method calls JCuda (the
     * class only reflects), and null with a message when even that fails.
     */
    private byte[] refuseJCudaCalls(byte[] classfile, String className, Throwable why) {
        try {
            ClassModel model = ClassFile.of().parse(classfile);
            if (model.methods().stream().noneMatch(this::callsJCuda)) {
                return null;
            }
            List<String> refused = new ArrayList<>();
            ClassTransform refuse = (ClassBuilder type, ClassElement element) -> {
                if (element instanceof MethodModel method && callsJCuda(method)) {
                    String site = className + "." + method.methodName().stringValue();
                    refused.add(method.methodName().stringValue());
                    type.transformMethod(method, (builder, part) -> {
                        if (part instanceof CodeModel) {
                            builder.withCode(code -> throwUnsupported(
                                    code,
                                    "the JCuda calls of " + site + ", which could not be redirected (" + why + ")"));
                        } else {
                            builder.with(part);
                        }
                    });
                } else {
                    type.with(element);
                }
            };
            byte[] rewritten = ClassFile.of().transformClass(model, refuse);
            System.err.println("vgpu: the JCuda calls of " + className + " could not be redirected to the job's vGPUs ("
                    + why + "); its methods " + refused + " throw instead");
            return rewritten;
        } catch (RuntimeException | LinkageError e) {
            System.err.println("vgpu: the JCuda calls of " + className + " could not be redirected to the job's vGPUs ("
                    + why + ") nor refused (" + e + "); they reach JCuda itself");
            return null;
        }
    }

    /** Whether {@code method}'s code calls JCuda's API or refers to it, other than by reflection. */
    private boolean callsJCuda(MethodModel method) {
        return method.code().stream().flatMap(CodeModel::elementStream).anyMatch(element -> switch (element) {
            case InvokeInstruction call -> SHIMS.containsKey(call.owner().asInternalName()) || isJCudaLibrary(call);
            case InvokeDynamicInstruction dynamic -> referencesJCuda(dynamic);
            case ConstantInstruction.LoadConstantInstruction load -> referencesJCuda(load.constantValue());
            default -> false;
        });
    }

    private static void dropOperands(CodeBuilder code, MethodTypeDesc type) {
        for (int i = type.parameterCount() - 1; i >= 0; i--) {
            if (isWide(type.parameterType(i))) {
                code.pop2();
            } else {
                code.pop();
            }
        }
    }

    private static void throwUnsupported(CodeBuilder code, String call) {
        code.ldc(call);
        code.invokestatic(CALL_SITES, "unsupported", UNSUPPORTED_TYPE);
        code.athrow();
    }

    private static boolean isWide(ClassDesc type) {
        return type.equals(ConstantDescs.CD_long) || type.equals(ConstantDescs.CD_double);
    }

    /**
     * A cheap look before parsing: a class that calls JCuda names a class of package jcuda in its constants, one that
     * reflects names {@code Method} or {@code Lookup}.
     */
    private static boolean mentionsAny(byte[] classfile) {
        return MARKS.stream().anyMatch(mark -> contains(classfile, mark));
    }

    private static boolean contains(byte[] classfile, byte[] mark) {
        outer:
        for (int i = 0; i <= classfile.length - mark.length; i++) {
            for (int j = 0; j < mark.length; j++) {
                if (classfile[i + j] != mark[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }
}
