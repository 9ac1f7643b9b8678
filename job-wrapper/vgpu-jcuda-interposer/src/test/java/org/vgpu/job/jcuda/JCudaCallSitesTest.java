package org.vgpu.job.jcuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.classfile.ClassFile;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Label;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDescs;
import java.lang.constant.MethodTypeDesc;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.security.cert.Certificate;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.stream.Collectors;

import jcuda.CudaException;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which classes the interposer rewrites (decided by code source: JCuda's jar is left alone, a program in a package
 * named {@code jcuda.*} is not), and the calls it refuses, naming them: reflection on JCuda's API, and the JCuda calls of
 * a class it cannot rewrite.
 */
class JCudaCallSitesTest {
    private final ClassLoader loader = getClass().getClassLoader();
    private final JCudaCallSites sites = new JCudaCallSites();

    @TempDir
    Path directory;

    @Test
    void aProgramInAPackageNamedJCudaIsRedirectedWhileTheClassesOfJCudasJarAreLeftAlone() throws Exception {
        String program = "jcuda/driver/samples/JCudaDriverVectorAdd";
        byte[] rewritten =
                sites.transform(loader, program, null, domainOf(program), RewrittenClassLoader.classBytes(program));

        assertNotNull(rewritten, "a program in package jcuda.driver.samples is the program's");
        List<String> owners = RewrittenClassLoader.staticCallOwners(rewritten);
        assertTrue(owners.contains("org/vgpu/job/jcuda/JCudaDriverShim"), owners.toString());
        assertFalse(owners.contains("jcuda/driver/JCudaDriver"), owners.toString());
        // JCudaVersion calls cuInit: only its jar tells it from a program
        for (String jcudas : List.of("jcuda/driver/JCudaDriver", "jcuda/JCudaVersion")) {
            assertNull(
                    sites.transform(loader, jcudas, null, domainOf(jcudas), RewrittenClassLoader.classBytes(jcudas)),
                    jcudas);
        }
    }

    /**
     * A "fat" jar of JCuda and a program together gives both the same code source: JCuda's classes are told by name,
     * so a program's class is the program's even in one of JCuda's own packages.
     */
    @Test
    void inAJarOfJCudaAndAProgramTogetherOnlyJCudasOwnClassesAreJCudas() throws IOException {
        Path jar = directory.resolve("application-with-jcuda.jar");
        try (OutputStream file = Files.newOutputStream(jar);
                JarOutputStream entries = new JarOutputStream(file)) {
            for (String entry : List.of(
                    ProgramClasses.JCUDA_MARKER, "jcuda/samples/Sample.class", "jcuda/driver/MyProgram.class")) {
                entries.putNextEntry(new JarEntry(entry));
                entries.closeEntry();
            }
        }
        URL location = jar.toUri().toURL();
        ProtectionDomain domain = new ProtectionDomain(new CodeSource(location, (Certificate[]) null), null);
        ProgramClasses classes = new ProgramClasses();
        try (URLClassLoader application = new URLClassLoader(new URL[] {location}, null)) {
            assertFalse(classes.isProgramClass(application, "jcuda/driver/CUdeviceptr", domain));
            assertFalse(classes.isProgramClass(application, "jcuda/driver/JCudaDriver", domain));
            assertFalse(classes.isProgramClass(application, "jcuda/JCudaVersion", domain));
            assertTrue(classes.isProgramClass(application, "jcuda/samples/Sample", domain));
            assertTrue(classes.isProgramClass(application, "jcuda/driver/MyProgram", domain), "JCuda's package");
            assertTrue(classes.isProgramClass(application, "jcuda/driver/CUdeviceptr", null), "no code source");
        }
        assertFalse(classes.isProgramClass(null, "jcuda/samples/Sample", null), "the boot class path is the JDK's");
        assertFalse(classes.isProgramClass(loader, "org/vgpu/runtime/nativegpu/NativeGpu", null), "vgpu's own");
    }

    /** The list that names JCuda's classes is the JCuda jar's own classes, the jar vgpu is built and tested with. */
    @Test
    void theListOfJCudasClassesIsTheClassesOfJCudasJar() throws Exception {
        Path jcudaJar = Path.of(JCudaDriver.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        Set<String> inJar;
        try (JarFile jar = new JarFile(jcudaJar.toFile())) {
            inJar = jar.stream()
                    .map(JarEntry::getName)
                    .filter(name -> name.endsWith(".class"))
                    .map(name -> name.substring(0, name.length() - ".class".length()))
                    .collect(Collectors.toSet());
        }
        assertTrue(inJar.contains("jcuda/driver/JCudaDriver"), jcudaJar.toString());
        assertEquals(
                inJar,
                ProgramClasses.JCUDA_CLASSES,
                "src/main/resources/org/vgpu/job/jcuda/jcuda-classes.txt" + " lists the classes of " + jcudaJar);
    }

    @Test
    void aCodeSourcesLocationIsTheJCudaResourcesUrlWithoutTheClass() {
        assertEquals(
                "file:/opt/lib/jcuda-12.6.0.jar",
                ProgramClasses.codeSourceLocation(
                        "jar:file:/opt/lib/jcuda-12.6.0.jar!/" + ProgramClasses.JCUDA_MARKER));
        assertEquals(
                "file:/build/classes/",
                ProgramClasses.codeSourceLocation("file:/build/classes/" + ProgramClasses.JCUDA_MARKER));
    }

    @Test
    void aReflectiveCallOfJCudaIsRefusedNamingTheCallAndWhereItIsMade() throws Exception {
        Class<?> program = rewrittenProgram("jcuda/samples/JCudaReflectiveCall");

        assertEquals(
                "vgpu does not support jcuda.driver.JCudaDriver.cuInit through reflection (Method.invoke in"
                        + " jcuda.samples.JCudaReflectiveCall.main) under vgpu run; see README (JCuda programs)",
                refusal(program, new String[0]).getMessage());
        assertEquals(
                "vgpu does not support jcuda.driver.JCudaDriver.cuInit through reflection (Lookup.findStatic in"
                        + " jcuda.samples.JCudaReflectiveCall.main) under vgpu run; see README (JCuda programs)",
                refusal(program, new String[] {"method-handle"}).getMessage());
    }

    /** The check before {@code Method.invoke} keeps the program's class the caller: its own private method is allowed. */
    @Test
    void aProgramsReflectionOnItsOwnMethodsStillWorks() throws Exception {
        Class<?> program = rewrittenProgram("jcuda/samples/JCudaReflectiveCall");
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
            program.getMethod("main", String[].class).invoke(null, (Object) new String[] {"own"});
        } finally {
            System.setOut(out);
        }
        assertEquals(
                "a program's own reflection works",
                printed.toString(StandardCharsets.UTF_8).strip());
    }

    /**
     * A class whose stack maps cannot be computed (two branches hold classes no loader has) still never reaches JCuda:
     * the method that calls it throws, naming the class, the method and why.
     */
    @Test
    void theJCudaCallsOfAClassThatCannotBeRewrittenThrowNamingTheClassAndMethod() throws Exception {
        String name = "jcudaprograms/Unresolvable";
        byte[] generated = unresolvable(
                name,
                code -> code.iconst_0()
                        .invokestatic(
                                ClassDesc.of("jcuda.driver.JCudaDriver"),
                                "cuInit",
                                MethodTypeDesc.of(ConstantDescs.CD_int, ConstantDescs.CD_int))
                        .ireturn());
        assertThrows(IllegalArgumentException.class, () -> sites.rewrite(generated, loader), "cannot be rewritten");

        PrintStream err = System.err;
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        byte[] refused;
        try {
            System.setErr(new PrintStream(said, true, StandardCharsets.UTF_8));
            refused = sites.transform(loader, name, null, null, generated);
        } finally {
            System.setErr(err);
        }
        assertTrue(
                said.toString(StandardCharsets.UTF_8)
                        .contains("vgpu: the JCuda calls of jcudaprograms.Unresolvable could not be redirected"),
                said.toString(StandardCharsets.UTF_8));
        Class<?> unresolvable = new RewrittenClassLoader(loader).define(name, refused);
        InvocationTargetException thrown = assertThrows(
                InvocationTargetException.class,
                () -> unresolvable.getMethod("run", boolean.class).invoke(null, true));
        assertInstanceOf(CudaException.class, thrown.getCause());
        assertTrue(
                thrown.getCause()
                        .getMessage()
                        .startsWith("vgpu does not support the JCuda calls of jcudaprograms.Unresolvable.run, which"
                                + " could not be redirected ("),
                thrown.getCause().getMessage());
    }

    /**
     * A call of one of JCuda's bindings of CUDA's libraries (here JCublas2's cublasCreate) would reach the node's
     * cuBLAS with the vGPUs' addresses: it throws instead, naming the call and where it is made.
     */
    @Test
    void aCallOfJCudasLibraryBindingsIsRefusedNamingTheCall() throws Exception {
        String name = "jcudaprograms/CublasUser";
        byte[] generated = ClassFile.of()
                .build(
                        ClassDesc.of(name.replace('/', '.')),
                        type -> type.withMethodBody(
                                "run",
                                MethodTypeDesc.of(ConstantDescs.CD_int),
                                ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC,
                                code -> code.aconst_null()
                                        .invokestatic(
                                                ClassDesc.of("jcuda.jcublas.JCublas2"),
                                                "cublasCreate",
                                                MethodTypeDesc.of(
                                                        ConstantDescs.CD_int,
                                                        ClassDesc.of("jcuda.jcublas.cublasHandle")))
                                        .ireturn()));

        Class<?> program =
                new RewrittenClassLoader(loader).define(name, sites.transform(loader, name, null, null, generated));

        InvocationTargetException thrown = assertThrows(
                InvocationTargetException.class, () -> program.getMethod("run").invoke(null));
        assertInstanceOf(CudaException.class, thrown.getCause());
        assertEquals(
                "vgpu does not support jcuda.jcublas.JCublas2.cublasCreate (in jcudaprograms.CublasUser.run; JCuda's"
                        + " bindings of CUDA's libraries do not run on vGPUs) under vgpu run; see README (JCuda programs)",
                thrown.getCause().getMessage());
    }

    /** A class that reflects but calls no JCuda keeps its code when it cannot be rewritten: it may be any library. */
    @Test
    void aClassThatOnlyReflectsIsLeftAsItIsWhenItCannotBeRewritten() {
        String name = "jcudaprograms/UnresolvableReflection";
        byte[] generated = unresolvable(
                name,
                code -> code.aconst_null()
                        .aconst_null()
                        .aconst_null()
                        .invokevirtual(
                                ClassDesc.of("java.lang.reflect.Method"),
                                "invoke",
                                MethodTypeDesc.of(
                                        ConstantDescs.CD_Object,
                                        ConstantDescs.CD_Object,
                                        ConstantDescs.CD_Object.arrayType()))
                        .pop()
                        .iconst_0()
                        .ireturn());
        assertThrows(IllegalArgumentException.class, () -> sites.rewrite(generated, loader), "cannot be rewritten");

        assertNull(sites.transform(loader, name, null, null, generated));
    }

    /**
     * A class of one method, {@code static int run(boolean)}, whose two branches hold classes no loader has (so its
     * stack maps cannot be computed), then does {@code rest}.
     */
    private static byte[] unresolvable(String name, Consumer<CodeBuilder> rest) {
        ClassDesc first = ClassDesc.of("jcudaprograms.MissingA");
        ClassDesc second = ClassDesc.of("jcudaprograms.MissingB");
        return ClassFile.of(ClassFile.StackMapsOption.DROP_STACK_MAPS)
                .build(
                        ClassDesc.of(name.replace('/', '.')),
                        type -> type.withMethodBody(
                                "run",
                                MethodTypeDesc.of(ConstantDescs.CD_int, ConstantDescs.CD_boolean),
                                ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC,
                                code -> {
                                    Label otherwise = code.newLabel();
                                    Label joined = code.newLabel();
                                    code.iload(0).ifeq(otherwise);
                                    code.aconst_null()
                                            .checkcast(first)
                                            .astore(1)
                                            .goto_(joined);
                                    code.labelBinding(otherwise);
                                    code.aconst_null().checkcast(second).astore(1);
                                    code.labelBinding(joined);
                                    code.aload(1).pop();
                                    rest.accept(code);
                                }));
    }

    private Class<?> rewrittenProgram(String name) throws IOException, ClassNotFoundException {
        byte[] rewritten = sites.transform(loader, name, null, domainOf(name), RewrittenClassLoader.classBytes(name));
        assertNotNull(rewritten, name);
        return new RewrittenClassLoader(loader).define(name, rewritten);
    }

    private static CudaException refusal(Class<?> program, String[] args) {
        InvocationTargetException thrown = assertThrows(
                InvocationTargetException.class,
                () -> program.getMethod("main", String[].class).invoke(null, (Object) args));
        return assertInstanceOf(CudaException.class, thrown.getCause());
    }

    private ProtectionDomain domainOf(String internalName) throws ClassNotFoundException {
        return Class.forName(internalName.replace('/', '.'), false, loader).getProtectionDomain();
    }
}
