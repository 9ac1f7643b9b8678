package org.vgpu.callsurface;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the processor inside javac on small surfaces, with the project's real annotations. */
class CallSurfaceProcessorTest {
    /** The annotations the processor reads, from the module that declares them: one source for both. */
    private static final Path ANNOTATIONS = Path.of("../gpu-runtime/src/main/java/org/vgpu/runtime/api/surface");

    @TempDir
    Path dir;

    private record Compilation(boolean success, List<String> errors, Path classes, Path generated) {}

    private static final Map<String, String> DEVICE = Map.of(
            "demo/Handle.java", """
                    package demo;
                    public record Handle(int id) {}
                    """,
            "demo/Device.java", """
                    package demo;
                    import org.vgpu.runtime.api.surface.Synchronizing;
                    public interface Device {
                        @Synchronizing
                        void sync(Handle handle);
                        int read(Handle handle, int offset);
                        void own();
                        default String name() { return "device"; }
                    }
                    """,
            "demo/Recorder.java", """
                    package demo;
                    import java.util.List;
                    public record Recorder(List<String> calls) implements Device {
                        public void sync(Handle handle) { calls.add("sync " + handle.id()); }
                        public int read(Handle handle, int offset) { calls.add("read " + handle.id()); return handle.id() + offset; }
                        public void own() { calls.add("own on the target"); }
                    }
                    """,
            "demo/Gated.java", """
                    package demo;
                    import java.util.ArrayList;
                    import java.util.List;
                    import org.vgpu.runtime.api.surface.GatedForwarder;
                    @GatedForwarder(Device.class)
                    public final class Gated extends GatedDevice {
                        final List<String> trace = new ArrayList<>();
                        private final Device target;
                        Gated(Device target) { this.target = target; }
                        @GatedForwarder.Enter String enter() { trace.add("enter"); return "slot"; }
                        @GatedForwarder.Exit void leave(String slot) { trace.add("exit " + slot); }
                        @GatedForwarder.Current Device target() { trace.add("current"); return target; }
                        @GatedForwarder.BeforeSynchronizing void check() { trace.add("check"); }
                        @GatedForwarder.Translate Handle translate(Handle handle) { return new Handle(handle.id() + 100); }
                        @Override public void own() { trace.add("own by hand"); }

                        public static List<String> scenario() {
                            List<String> calls = new ArrayList<>();
                            Gated gated = new Gated(new Recorder(calls));
                            gated.sync(new Handle(1));
                            gated.trace.add("read returned " + gated.read(new Handle(2), 5));
                            gated.own();
                            gated.trace.add("target saw " + calls);
                            return gated.trace;
                        }
                    }
                    """);

    @Test
    void aGatedCallEntersTranslatesChecksOnlyWhenSynchronizingAndExits() throws Exception {
        Compilation compilation = compile(DEVICE);
        assertTrue(compilation.success, compilation.errors.toString());
        assertEquals(
                List.of(
                        "enter",
                        "check",
                        "current",
                        "exit slot",
                        "enter",
                        "current",
                        "exit slot",
                        "read returned 107",
                        "own by hand",
                        "target saw [sync 101, read 102]"),
                run(compilation, "demo.Gated", "scenario"));
        String generated = Files.readString(compilation.generated.resolve("demo/GatedDevice.java"));
        assertFalse(generated.contains("own()"), "a call the class writes itself is not generated:\n" + generated);
        assertFalse(generated.contains("->"), "no lambda in a gated call:\n" + generated);
    }

    @Test
    void aGatedForwarderWithoutItsHooksIsRefused() throws IOException {
        Map<String, String> sources = new java.util.HashMap<>(DEVICE);
        sources.put("demo/Gated.java", """
                package demo;
                import org.vgpu.runtime.api.surface.GatedForwarder;
                @GatedForwarder(Device.class)
                public abstract class Gated implements Device {
                }
                """);
        Compilation compilation = compile(sources);
        assertFalse(compilation.success);
        assertTrue(
                compilation.errors.stream().anyMatch(e -> e.contains("names its @Enter, @Exit and @Current hooks")),
                compilation.errors.toString());
    }

    @Test
    void thePlainForwarderPassesEveryCallToItsDelegate() throws Exception {
        Map<String, String> sources = new java.util.HashMap<>(DEVICE);
        sources.remove("demo/Gated.java");
        sources.put(
                "demo/Device.java",
                DEVICE.get("demo/Device.java")
                        .replace(
                                "public interface Device",
                                "@org.vgpu.runtime.api.surface.GenerateForwarder(\"ForwardingDevice\")\npublic interface Device"));
        sources.put("demo/Scenario.java", """
                package demo;
                import java.util.ArrayList;
                import java.util.List;
                public final class Scenario {
                    public static List<String> run() {
                        List<String> calls = new ArrayList<>();
                        Device forwarding = new ForwardingDevice(new Recorder(calls)) {
                            @Override public void own() { calls.add("own, overridden"); }
                        };
                        forwarding.sync(new Handle(1));
                        calls.add("read returned " + forwarding.read(new Handle(2), 5));
                        forwarding.own();
                        return calls;
                    }
                }
                """);
        Compilation compilation = compile(sources);
        assertTrue(compilation.success, compilation.errors.toString());
        assertEquals(
                List.of("sync 1", "read 2", "read returned 7", "own, overridden"),
                run(compilation, "demo.Scenario", "run"));
    }

    // ---- the wire surface: mistakes are reported at the description, and nothing is generated

    private static final Map<String, String> WIRE = Map.of(
            "io/netty/buffer/ByteBuf.java", """
                    package io.netty.buffer;
                    public abstract class ByteBuf {
                        public abstract int readInt();
                        public abstract ByteBuf writeInt(int value);
                    }
                    """,
            "wire/Codecs.java", """
                    package wire;
                    import io.netty.buffer.ByteBuf;
                    final class Codecs {
                        static int readInt32(ByteBuf in) { return in.readInt(); }
                        static void writeInt32(ByteBuf out, int value) { out.writeInt(value); }
                    }
                    """);

    private Compilation compileSurface(String methods) throws IOException {
        Map<String, String> sources = new java.util.HashMap<>(WIRE);
        sources.put("wire/Calls.java", """
                package wire;
                import org.vgpu.runtime.api.surface.Call;
                import org.vgpu.runtime.api.surface.CallSurface;
                import org.vgpu.runtime.api.surface.Codec;
                @CallSurface(codecs = Codecs.class)
                interface Calls {
                %s
                }
                """.formatted(methods));
        return compile(sources);
    }

    @Test
    void twoRequestsWithOneOpcodeAreRefused() throws IOException {
        Compilation compilation = compileSurface("""
                    @Call(opcode = 0x0070, kind = Call.Kind.ASYNC) void streamCreate(int streamId);
                    @Call(opcode = 0x0070, kind = Call.Kind.ASYNC) void streamWaitEvent(int streamId, int eventId);
                """);
        assertFalse(compilation.success);
        assertTrue(
                compilation.errors.contains("opcode 0x0070 is already STREAM_CREATE"), compilation.errors.toString());
        assertFalse(
                Files.exists(compilation.generated.resolve("wire/Opcode.java")),
                "nothing is generated from a wrong description");
    }

    @Test
    void aFieldWithoutCodecOrNamedLikeTheGeneratedCodesVariablesIsRefused() throws IOException {
        Compilation compilation = compileSurface("""
                    @Call(opcode = 0x0040, kind = Call.Kind.SYNC) void memAllocAt(long address, int frame);
                    @Call(opcode = 0x0300, kind = Call.Kind.SYNC) void tooHigh(@Codec("Int32") int value);
                """);
        assertFalse(compilation.success);
        assertTrue(
                compilation.errors.contains(
                        "codec Int64 needs static readInt64 and writeInt64 methods in the surface's codecs class"),
                compilation.errors.toString());
        assertTrue(
                compilation.errors.contains("'frame' is a name the generated code uses; call the field otherwise"),
                compilation.errors.toString());
        assertTrue(
                compilation.errors.contains("opcode 0x0300 is outside [0x0001, 0x00FF]"),
                compilation.errors.toString());
    }

    @Test
    void constantNamesAreTheMethodNamesInUpperSnakeCase() {
        assertEquals("MEM_ALLOC_AT", WireSurfaceGenerator.constantName("memAllocAt"));
        assertEquals("STREAM_WAIT_EVENT", WireSurfaceGenerator.constantName("streamWaitEvent"));
    }

    // ---- running javac

    private Compilation compile(Map<String, String> sources) throws IOException {
        Path src = Files.createDirectories(dir.resolve("src"));
        Path classes = Files.createDirectories(dir.resolve("classes"));
        Path generated = Files.createDirectories(dir.resolve("generated"));
        List<Path> files = new ArrayList<>();
        for (Map.Entry<String, String> source : sources.entrySet()) {
            Path file = src.resolve(source.getKey());
            Files.createDirectories(file.getParent());
            files.add(Files.writeString(file, source.getValue()));
        }
        try (Stream<Path> annotations = Files.list(ANNOTATIONS)) {
            annotations.forEach(files::add);
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager fileManager =
                javac.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
            JavaCompiler.CompilationTask task = javac.getTask(
                    null,
                    fileManager,
                    diagnostics,
                    List.of("-d", classes.toString(), "-s", generated.toString(), "-parameters"),
                    null,
                    fileManager.getJavaFileObjectsFromPaths(files));
            task.setProcessors(List.of(new CallSurfaceProcessor()));
            boolean success = task.call();
            List<String> errors = diagnostics.getDiagnostics().stream()
                    .filter(d -> d.getKind() == Diagnostic.Kind.ERROR)
                    .map(d -> d.getMessage(Locale.ROOT))
                    .toList();
            return new Compilation(success, errors, classes, generated);
        }
    }

    @SuppressWarnings("unchecked")
    private static List<String> run(Compilation compilation, String className, String method) throws Exception {
        try (URLClassLoader loader = new URLClassLoader(
                new URL[] {compilation.classes.toUri().toURL()}, CallSurfaceProcessorTest.class.getClassLoader())) {
            Method scenario = loader.loadClass(className).getMethod(method);
            return (List<String>) scenario.invoke(null);
        }
    }
}
