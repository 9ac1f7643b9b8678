package org.vgpu.job.jcuda;

import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassHierarchyResolver;
import java.lang.classfile.ClassModel;
import java.lang.classfile.ClassTransform;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.CodeElement;
import java.lang.classfile.CodeTransform;
import java.lang.classfile.Opcode;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.classfile.instruction.ConstantInstruction;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.classfile.instruction.InvokeInstruction;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDesc;
import java.lang.constant.ConstantDescs;
import java.lang.constant.DirectMethodHandleDesc;
import java.lang.constant.DynamicCallSiteDesc;
import java.lang.constant.MethodHandleDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
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

import org.vgpu.runtime.api.VirtualGpu;

/**
 * Rewrites a program's calls of JCuda's static API methods ({@code JCudaDriver}, {@code JCuda}, {@code JNvrtc}) into
 * calls of vgpu's shims with the same name and descriptor, as its classes load: the program is not changed on disk
 * and needs no vgpu type. A call the shim has no method for becomes code that throws a {@code CudaException} naming
 * the call ({@link JCudaApi#unsupported}), so a program never goes on with a result vgpu did not compute.
 *
 * <p>Why call sites, not JCuda's classes: vgpu's own native backend drives the GPU through JCudaDriver, which must
 * stay JCuda's. So classes of JCuda, of vgpu and of the JDK are left as they are; every other class (the program and
 * its libraries) is rewritten where it calls these three classes. Why the JDK's {@code java.lang.classfile}: it is
 * part of Java 25, needs no bytecode library in the interposer, and regenerates the stack maps of the methods it changes.
 * Method references ({@code JCudaDriver::cuMemAlloc}) and method handle constants of these calls are redirected the
 * same way. Not rewritten: reflection ({@code Method.invoke}, {@code MethodHandles.Lookup.findStatic}), which reaches
 * JCuda itself; README says so.
 */
public final class JCudaCallSites implements ClassFileTransformer {
    /** JCuda's API class, by internal name, and its shim. */
    static final Map<String, Class<?>> SHIMS = Map.of(
            "jcuda/driver/JCudaDriver", JCudaDriverShim.class,
            "jcuda/runtime/JCuda", JCudaRuntimeShim.class,
            "jcuda/nvrtc/JNvrtc", JNvrtcShim.class);

    private static final byte[] JCUDA_MARK = "jcuda/".getBytes(StandardCharsets.US_ASCII);
    private static final List<String> LEFT_ALONE = List.of("jcuda/", "org/vgpu/", "java/", "javax/", "jdk/", "sun/");
    private static final ClassDesc UNSUPPORTED_OWNER = ClassDesc.of(JCudaCallSites.class.getName());
    private static final MethodTypeDesc UNSUPPORTED_TYPE =
            MethodTypeDesc.of(ClassDesc.of(RuntimeException.class.getName()), ConstantDescs.CD_String);

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
        if (loader == null || className == null || LEFT_ALONE.stream().anyMatch(className::startsWith)) {
            return null;
        }
        if (!mentionsJCuda(classfileBuffer)) {
            return null;
        }
        try {
            return rewrite(classfileBuffer, loader);
        } catch (RuntimeException | LinkageError e) {
            // the JVM drops a transformer's exception silently and loads the class as it was, which would run JCuda
            // itself behind vgpu's back: say so
            System.err.println("vgpu: the JCuda calls of " + className.replace('/', '.') + " could not be redirected"
                    + " to the job's vGPUs (" + e + "); they reach JCuda itself");
            return null;
        }
    }

    /** The class's bytes with its JCuda calls redirected; null when it has none. */
    byte[] rewrite(byte[] classfile, ClassLoader loader) {
        ClassFile files = ClassFile.of(ClassFile.ClassHierarchyResolverOption.of(
                ClassHierarchyResolver.defaultResolver().orElse(ClassHierarchyResolver.ofResourceParsing(loader))));
        ClassModel model = files.parse(classfile);
        boolean[] changed = {false};
        CodeTransform redirect = (CodeBuilder code, CodeElement element) -> {
            switch (element) {
                case InvokeInstruction call
                when call.opcode() == Opcode.INVOKESTATIC
                        && SHIMS.containsKey(call.owner().asInternalName()) -> {
                    redirect(code, call);
                    changed[0] = true;
                }
                case InvokeDynamicInstruction site
                when site.bootstrapArgs().stream().anyMatch(JCudaCallSites::isJCudaHandle) -> {
                    redirect(code, site);
                    changed[0] = true;
                }
                case ConstantInstruction.LoadConstantInstruction load
                when isJCudaHandle(load.constantValue()) -> {
                    redirect(code, load);
                    changed[0] = true;
                }
                default -> code.with(element);
            }
        };
        byte[] rewritten = files.transformClass(model, ClassTransform.transformingMethodBodies(redirect));
        return changed[0] ? rewritten : null;
    }

    private void redirect(CodeBuilder code, InvokeInstruction call) {
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
        for (int i = type.parameterCount() - 1; i >= 0; i--) {
            pop(code, type.parameterType(i));
        }
        throwUnsupported(code, name);
    }

    /**
     * A method reference to a JCuda call ({@code JCudaDriver::cuMemAlloc}: an invokedynamic whose bootstrap arguments
     * hold a handle of the call) gets the shim's handle; one to a call no shim serves becomes the throw at the point
     * the reference is made, so the program never holds a reference that would reach JCuda itself.
     */
    private void redirect(CodeBuilder code, InvokeDynamicInstruction site) {
        List<ConstantDesc> arguments = new ArrayList<>();
        for (ConstantDesc argument : site.bootstrapArgs()) {
            if (!isJCudaHandle(argument)) {
                arguments.add(argument);
                continue;
            }
            DirectMethodHandleDesc handle = (DirectMethodHandleDesc) argument;
            DirectMethodHandleDesc shim = shimHandle(handle);
            if (shim == null) {
                MethodTypeDesc type = site.typeSymbol();
                for (int i = type.parameterCount() - 1; i >= 0; i--) {
                    pop(code, type.parameterType(i));
                }
                throwUnsupported(code, handle.methodName());
                return;
            }
            arguments.add(shim);
        }
        code.invokedynamic(DynamicCallSiteDesc.of(
                site.bootstrapMethod(),
                site.name().stringValue(),
                site.typeSymbol(),
                arguments.toArray(ConstantDesc[]::new)));
    }

    /** A JCuda call's method handle loaded as a constant gets the shim's, or the throw where no shim serves it. */
    private void redirect(CodeBuilder code, ConstantInstruction.LoadConstantInstruction load) {
        DirectMethodHandleDesc handle = (DirectMethodHandleDesc) load.constantValue();
        DirectMethodHandleDesc shim = shimHandle(handle);
        if (shim == null) {
            throwUnsupported(code, handle.methodName());
        } else {
            code.ldc(shim);
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

    private static void pop(CodeBuilder code, ClassDesc type) {
        if (isWide(type)) {
            code.pop2();
        } else {
            code.pop();
        }
    }

    private static void throwUnsupported(CodeBuilder code, String call) {
        code.ldc(call);
        code.invokestatic(UNSUPPORTED_OWNER, "unsupported", UNSUPPORTED_TYPE);
        code.athrow();
    }

    private static boolean isWide(ClassDesc type) {
        return type.equals(ConstantDescs.CD_long) || type.equals(ConstantDescs.CD_double);
    }

    /** A cheap look before parsing: a class that calls JCuda names a class of package jcuda in its constants. */
    private static boolean mentionsJCuda(byte[] classfile) {
        outer:
        for (int i = 0; i <= classfile.length - JCUDA_MARK.length; i++) {
            for (int j = 0; j < JCUDA_MARK.length; j++) {
                if (classfile[i + j] != JCUDA_MARK[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }
}
