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
    private static final Path ANNOTATIONS = Path.of("../vgpu-gpu-api/src/main/java/org/vgpu/runtime/api/surface");

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

    private static final Map<String, String> SETTINGS = Map.of(
            "demo/Context.java", """
                    package demo;
                    import org.vgpu.runtime.api.surface.ReplayedSetting;
                    public interface Context {
                        @ReplayedSetting
                        void setLimit(String limit, long value);
                        long limit(String limit);
                    }
                    """,
            "demo/Limits.java", """
                    package demo;
                    import java.util.List;
                    public record Limits(String name, List<String> calls) implements Context {
                        public void setLimit(String limit, long value) {
                            if (value < 0) { throw new IllegalArgumentException("refused"); }
                            calls.add(name + " " + limit + "=" + value);
                        }
                        public long limit(String limit) { return 0; }
                    }
                    """,
            "demo/Gated.java", """
                    package demo;
                    import java.util.ArrayList;
                    import java.util.LinkedHashMap;
                    import java.util.List;
                    import java.util.Map;
                    import org.vgpu.runtime.api.surface.GatedForwarder;
                    @GatedForwarder(Context.class)
                    public final class Gated extends GatedContext {
                        final Map<Object, GatedContext.Setting> kept = new LinkedHashMap<>();
                        private final Context target;
                        Gated(Context target) { this.target = target; }
                        @GatedForwarder.Enter void enter() {}
                        @GatedForwarder.Exit void leave() {}
                        @GatedForwarder.Current Context target() { return target; }
                        @GatedForwarder.Record void keep(GatedContext.Setting setting) {
                            kept.remove(setting.key());
                            kept.put(setting.key(), setting);
                        }

                        public static List<String> scenario() {
                            List<String> calls = new ArrayList<>();
                            Gated gated = new Gated(new Limits("source", calls));
                            gated.setLimit("stack", 1024);
                            gated.setLimit("heap", 4096);
                            gated.setLimit("stack", 2048);
                            try {
                                gated.setLimit("heap", -1);
                            } catch (IllegalArgumentException refused) {
                                calls.add("refused");
                            }
                            Limits target = new Limits("target", calls);
                            gated.kept.values().forEach(setting -> setting.replayOn(target));
                            return calls;
                        }
                    }
                    """);

    @Test
    void aReplayedSettingIsRecordedOnceTakenAndTheLastOfEachKeyIsMadeAgainOnATarget() throws Exception {
        Compilation compilation = compile(SETTINGS);
        assertTrue(compilation.success, compilation.errors.toString());
        assertEquals(
                List.of(
                        "source stack=1024",
                        "source heap=4096",
                        "source stack=2048",
                        "refused",
                        "target heap=4096",
                        "target stack=2048"),
                run(compilation, "demo.Gated", "scenario"));
        String generated = Files.readString(compilation.generated.resolve("demo/GatedContext.java"));
        assertTrue(
                generated.contains("            target().setLimit(limit, value);\n"
                        + "            keep(new SetLimitSetting(limit, value));\n"),
                "recorded after the call returned, straight-line:\n" + generated);
        assertFalse(generated.contains("->"), "no lambda in a gated call:\n" + generated);
    }

    @Test
    void aSettingOfAHandleIsKeyedByItAndMadeAgainWithTheTargetsHandle() throws Exception {
        Map<String, String> sources = new java.util.HashMap<>();
        sources.put("demo/Handle.java", """
                package demo;
                public record Handle(int id) {}
                """);
        sources.put("demo/Context.java", """
                package demo;
                import org.vgpu.runtime.api.surface.ReplayedSetting;
                public interface Context {
                    @ReplayedSetting
                    void setAttribute(Handle handle, String attribute, long value);
                }
                """);
        sources.put("demo/Gated.java", """
                package demo;
                import java.util.ArrayList;
                import java.util.LinkedHashMap;
                import java.util.List;
                import java.util.Map;
                import org.vgpu.runtime.api.surface.GatedForwarder;
                @GatedForwarder(Context.class)
                public final class Gated extends GatedContext {
                    final Map<Object, GatedContext.Setting> kept = new LinkedHashMap<>();
                    private final Context target;
                    Gated(Context target) { this.target = target; }
                    @GatedForwarder.Enter void enter() {}
                    @GatedForwarder.Exit void leave() {}
                    @GatedForwarder.Current Context target() { return target; }
                    @GatedForwarder.Translate Handle backend(Handle handle) { return new Handle(handle.id() + 100); }
                    @GatedForwarder.Record void keep(GatedContext.Setting setting) {
                        kept.remove(setting.key());
                        kept.put(setting.key(), setting);
                    }

                    public static List<String> scenario() {
                        List<String> calls = new ArrayList<>();
                        Gated gated = new Gated((handle, attribute, value) ->
                                calls.add("source " + handle.id() + " " + attribute + "=" + value));
                        gated.setAttribute(new Handle(1), "carveout", 10);
                        gated.setAttribute(new Handle(2), "carveout", 20);
                        gated.setAttribute(new Handle(1), "carveout", 30);
                        Context target = (handle, attribute, value) ->
                                calls.add("target " + handle.id() + " " + attribute + "=" + value);
                        for (GatedContext.Setting setting : gated.kept.values()) {
                            calls.add("names " + setting.handles());
                            setting.onTarget(handle -> new Handle(handle.id() + 500)).replayOn(target);
                        }
                        return calls;
                    }
                }
                """);
        Compilation compilation = compile(sources);
        assertTrue(compilation.success, compilation.errors.toString());
        assertEquals(
                List.of(
                        "source 101 carveout=10",
                        "source 102 carveout=20",
                        "source 101 carveout=30",
                        "names [Handle[id=2]]",
                        "target 502 carveout=20",
                        "names [Handle[id=1]]",
                        "target 501 carveout=30"),
                run(compilation, "demo.Gated", "scenario"));
    }

    @Test
    void aReplayedSettingWithoutARecordHookIsRefused() throws IOException {
        Map<String, String> sources = new java.util.HashMap<>(SETTINGS);
        sources.put("demo/Gated.java", """
                package demo;
                import org.vgpu.runtime.api.surface.GatedForwarder;
                @GatedForwarder(Context.class)
                public final class Gated extends GatedContext {
                    @GatedForwarder.Enter void enter() {}
                    @GatedForwarder.Exit void leave() {}
                    @GatedForwarder.Current Context target() { return null; }
                }
                """);
        Compilation compilation = compile(sources);
        assertFalse(compilation.success);
        assertTrue(
                compilation.errors.stream()
                        .anyMatch(e -> e.contains("setLimit is @ReplayedSetting: name a @GatedForwarder.Record hook")),
                compilation.errors.toString());
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
    void theCHeaderListsTheConstantsAndEveryFrameWithItsFieldsLayouts() throws IOException {
        Map<String, String> sources = new java.util.HashMap<>(WIRE);
        sources.put("wire/Codecs.java", """
                package wire;
                import io.netty.buffer.ByteBuf;
                import org.vgpu.runtime.api.surface.WireLayout;
                final class Codecs {
                    static final int ARG_POINTER = 1;
                    @WireLayout("int32") static int readInt32(ByteBuf in) { return in.readInt(); }
                    static void writeInt32(ByteBuf out, int value) { out.writeInt(value); }
                    static long readInt64(ByteBuf in) { return 0; }
                    static void writeInt64(ByteBuf out, long value) {}
                }
                """);
        sources.put("wire/Frames.java", """
                package wire;
                final class Frames {
                    static final int MAGIC = 0x56475055;
                    static final int MAX_BODY_BYTES = 16 << 20;
                    static final int FLAG_MORE = 2;
                    static final String NOT_A_NUMBER = "left out";
                }
                """);
        sources.put("wire/Calls.java", """
                package wire;
                import org.vgpu.runtime.api.surface.Call;
                import org.vgpu.runtime.api.surface.CallSurface;
                import org.vgpu.runtime.api.surface.Reply;
                @CallSurface(codecs = Codecs.class)
                interface Calls {
                    /** {@code int32 stream id}, see {@link #OK the reply}. */
                    @Call(opcode = 0x0070, kind = Call.Kind.ASYNC) void streamCreate(int streamId);
                    /** Success. */
                    @Reply int OK = 0x0010;
                    @Call(opcode = 0x0041, kind = Call.Kind.SYNCHRONIZING) void memFree(long address);
                }
                """);
        // the generated classes need a real Frames to compile; the header is written before they are compiled
        Compilation compilation = compile(sources);

        String header = Files.readString(compilation.classes.resolve("META-INF/vgpu/vgpu_wire.h"));
        assertTrue(header.contains("#define VGPU_WIRE_MAGIC 0x56475055 /* Frames.MAGIC */\n"), header);
        assertTrue(header.contains("#define VGPU_WIRE_MAX_BODY_BYTES 0x1000000 /* Frames.MAX_BODY_BYTES */\n"), header);
        assertTrue(header.contains("#define VGPU_WIRE_FLAG_MORE 2 /* Frames.FLAG_MORE */\n"), header);
        assertTrue(header.contains("#define VGPU_WIRE_ARG_POINTER 1 /* Codecs.ARG_POINTER */\n"), header);
        assertFalse(header.contains("NOT_A_NUMBER"), header);
        assertTrue(header.contains("""
                        /* STREAM_CREATE: request, may be async (FLAG_ASYNC)
                         *   int32 stream id, see the reply.
                         *   body: streamId int32
                         */
                        #define VGPU_OP_STREAM_CREATE 0x0070
                        """), header);
        assertTrue(header.contains("/* OK: reply\n *   Success.\n */\n#define VGPU_OP_OK 0x0010\n"), header);
        assertTrue(
                header.contains("*   body: address LAYOUT NOT DESCRIBED (readInt64)\n"),
                "a codec without @WireLayout is marked, for the protocol's test to refuse: " + header);
        assertTrue(
                header.indexOf("VGPU_OP_OK") < header.indexOf("VGPU_OP_MEM_FREE")
                        && header.indexOf("VGPU_OP_MEM_FREE") < header.indexOf("VGPU_OP_STREAM_CREATE"),
                "in opcode order: " + header);
    }

    // ---- one-to-one calls of an API: both ends generated from the API's own annotations

    private static final Map<String, String> ONE_TO_ONE = Map.of(
            "api/Handle.java", """
                    package api;
                    public record Handle(int id) {}
                    """,
            "api/Device.java", """
                    package api;
                    import org.vgpu.runtime.api.surface.Call;
                    import org.vgpu.runtime.api.surface.RemoteCall;
                    import org.vgpu.runtime.api.surface.Synchronizing;
                    public interface Device {
                        @RemoteCall(opcode = 0x0021, kind = Call.Kind.ASYNC)
                        void mark(Handle handle, long value);
                        @Synchronizing
                        @RemoteCall(opcode = 0x0022, kind = Call.Kind.SYNCHRONIZING)
                        boolean query(Handle handle);
                        void local();
                    }
                    """,
            "api/Validating.java", """
                    package api;
                    public abstract class Validating<M, S> implements Device {
                        protected Validating(String name) {}
                        protected abstract void doMark(S handle, long value);
                        protected abstract boolean doQuery(S handle);
                        protected abstract int doRead(S handle, int offset);
                        protected abstract M module();
                        public void mark(Handle handle, long value) { doMark(null, value); }
                        public boolean query(Handle handle) { return doQuery(null); }
                        public void local() {}
                    }
                    """);

    private Compilation compileOneToOne(String surface) throws IOException {
        return compileOneToOne(surface, ONE_TO_ONE.get("api/Device.java"));
    }

    private Compilation compileOneToOne(String surface, String device) throws IOException {
        return compileOneToOne(surface, device, ONE_TO_ONE.get("api/Validating.java"));
    }

    private Compilation compileOneToOne(String surface, String device, String validating) throws IOException {
        Map<String, String> sources = new java.util.HashMap<>(WIRE);
        sources.putAll(ONE_TO_ONE);
        sources.put("api/Device.java", device);
        sources.put("api/Validating.java", validating);
        sources.put("wire/Calls.java", """
                package wire;
                import org.vgpu.runtime.api.surface.Call;
                import org.vgpu.runtime.api.surface.CallSurface;
                @CallSurface(codecs = Codecs.class, api = api.Device.class, validation = api.Validating.class,
                        client = "client.ClientCalls", worker = "worker.WorkerCalls")
                interface Calls {
                %s
                }
                """.formatted(surface));
        sources.put("wire/Codecs.java", """
                package wire;
                import io.netty.buffer.ByteBuf;
                final class Codecs {
                    static int readInt32(ByteBuf in) { return in.readInt(); }
                    static void writeInt32(ByteBuf out, int value) { out.writeInt(value); }
                    static long readInt64(ByteBuf in) { return 0; }
                    static void writeInt64(ByteBuf out, long value) {}
                    static boolean readBoolean(ByteBuf in) { return in.readInt() == 1; }
                    static void writeBoolean(ByteBuf out, boolean value) { out.writeInt(value ? 1 : 0); }
                }
                """);
        return compile(sources);
    }

    @Test
    void aOneToOneCallGetsItsOpcodeAndBothEndsFromTheApi() throws IOException {
        Compilation compilation = compileOneToOne("""
                    @Call(opcode = 0x0020, kind = Call.Kind.SYNC) void open(int deviceId);
                """);
        // The generated code frames through wire classes this test does not provide: only what is written counts.
        String opcodes = Files.readString(compilation.generated.resolve("wire/Opcode.java"));
        assertTrue(
                opcodes.contains("OPEN(0x0020, Direction.REQUEST, false, false, false),\n")
                        && opcodes.contains("MARK(0x0021, Direction.REQUEST, true, false, false),\n")
                        && opcodes.contains("QUERY(0x0022, Direction.REQUEST, false, true, false);\n"),
                "the API's calls join the table in opcode order:\n" + opcodes);
        assertTrue(
                opcodes.contains("{@code int32 handle id}; OK: {@code uint8 (0 or 1)}"),
                "a one-to-one call's layout is documented:\n" + opcodes);
        String client = Files.readString(compilation.generated.resolve("client/ClientCalls.java"));
        assertTrue(
                client.contains("abstract class ClientCalls<M, S> extends Validating<M, S> {")
                        && client.contains("    abstract int handleId(S handle);"),
                "a hook gives the wire id of a handle's backend object on the client:\n" + client);
        assertTrue(
                client.contains(
                        "protected final void doMark(S handle, long value) {\n"
                                + "        connection().send((encoder, requestId) -> encoder.mark(requestId, true, handleId(handle), value));"),
                "an asynchronous call is batched as a hand-written one is:\n" + client);
        assertTrue(
                client.contains(
                        "return connection().call((encoder, requestId) -> encoder.query(requestId, handleId(handle)),"
                                + " ResultDecoder::query);"),
                "a call with a result waits for it:\n" + client);
        assertTrue(client.contains("protected ClientCalls(String name) {"), "the validation class's constructor");
        assertFalse(client.contains("doLocal"), "a call without @RemoteCall is not generated:\n" + client);
        String worker = Files.readString(compilation.generated.resolve("worker/WorkerCalls.java"));
        assertTrue(
                worker.contains("public final void query(Frame frame, int handleId) {\n"
                        + "        if (answeredWithKeptFailure(frame)) {\n"
                        + "            return;\n"
                        + "        }\n"
                        + "        try {\n"
                        + "            boolean result = gpu().query(handle(handleId));\n"
                        + "            reply().query(frame.requestId(), result);"),
                "the worker reports a kept failure, translates the id and answers the result:\n" + worker);
        assertTrue(
                worker.contains(
                        "            gpu().mark(handle(handleId), value);\n" + "            if (!frame.isAsync()) {"),
                "an asynchronous request is answered only when sent synchronous:\n" + worker);
        assertFalse(worker.contains("->"), "no lambda per request on the worker:\n" + worker);
        assertFalse(worker.contains("void open("), "a hand-written request stays the worker's own:\n" + worker);
        String results = Files.readString(compilation.generated.resolve("wire/ResultEncoder.java"));
        assertTrue(results.contains("Codecs.writeBoolean(out, result);"), results);
    }

    /** An API of one call, {@code read(parameters)}, which the validation class's {@code doRead(S handle, int offset)} serves. */
    private Compilation compileRead(String parameters) throws IOException {
        return compileOneToOne("", """
                package api;
                import org.vgpu.runtime.api.surface.Call;
                import org.vgpu.runtime.api.surface.RemoteCall;
                public interface Device {
                    @RemoteCall(opcode = 0x0023, kind = Call.Kind.SYNC)
                    int read(%s);
                }
                """.formatted(parameters));
    }

    @Test
    void aPrimitiveThatTakesTheOperandsInAnotherOrderSetsTheOrderOnTheWire() throws IOException {
        Compilation compilation = compileRead("int offset, Handle handle");
        String client = Files.readString(compilation.generated.resolve("client/ClientCalls.java"));
        assertTrue(
                client.contains("protected final int doRead(S handle, int offset) {\n"
                        + "        return connection().call((encoder, requestId) -> encoder.read(requestId, handleId(handle),"
                        + " offset), ResultDecoder::read);"),
                "the client sends the operands in the primitive's order:\n" + client);
        String worker = Files.readString(compilation.generated.resolve("worker/WorkerCalls.java"));
        assertTrue(
                worker.contains("public final void read(Frame frame, int handleId, int offset) {")
                        && worker.contains("int result = gpu().read(offset, handle(handleId));"),
                "the worker makes the call with the parameters in the call's order:\n" + worker);
    }

    @Test
    void aPrimitiveWhoseOperandFitsNoParameterIsAMistake() throws IOException {
        Compilation compilation = compileRead("long offset, int handle");
        assertFalse(compilation.success);
        assertTrue(
                compilation.errors.contains("Validating.doRead takes S here, and no parameter of the call is the same"
                        + " type or a handle's backend object"),
                compilation.errors.toString());
    }

    @Test
    void anOpcodeOfTheSurfaceIsNotTakenAgainByTheApi() throws IOException {
        Compilation compilation = compileOneToOne("""
                    @Call(opcode = 0x0021, kind = Call.Kind.SYNC) void open(int deviceId);
                """);
        assertFalse(compilation.success);
        assertTrue(compilation.errors.contains("opcode 0x0021 is already OPEN"), compilation.errors.toString());
        assertFalse(
                Files.exists(compilation.generated.resolve("client/ClientCalls.java")),
                "nothing is generated from a wrong description");
    }

    @Test
    void aOneToOneCallMatchesItsPrimitiveAndItsKind() throws IOException {
        Compilation compilation =
                compileOneToOne("", ONE_TO_ONE.get("api/Device.java").replace("    void local();", """
                            @RemoteCall(opcode = 0x0030, kind = Call.Kind.ASYNC)
                            int count(Handle handle);
                            @RemoteCall(opcode = 0x0031, kind = Call.Kind.SYNCHRONIZING)
                            void drain();
                            @RemoteCall(opcode = 0x0032, kind = Call.Kind.SYNC)
                            void local();
                        """));
        assertFalse(compilation.success);
        assertTrue(compilation.errors.contains("an ASYNC call has no result to answer"), compilation.errors.toString());
        assertTrue(
                compilation.errors.contains(
                        "a @Synchronizing call is SYNCHRONIZING on the wire, and only such a call is"),
                compilation.errors.toString());
        assertTrue(
                compilation.errors.contains("Validating has no doLocal with 0 parameters for the client to implement:"
                        + " a call without one is written by hand"),
                compilation.errors.toString());
        assertFalse(
                Files.exists(compilation.generated.resolve("client/ClientCalls.java")),
                "nothing is generated from a wrong description");
    }

    @Test
    void aDestroyingCallSendsNothingWhileClosingAndTheWorkerForgetsItsId() throws IOException {
        Compilation compilation = compileOneToOne(
                "",
                ONE_TO_ONE.get("api/Device.java").replace("    void local();", """
                            @RemoteCall(opcode = 0x0030, kind = Call.Kind.ASYNC, destroys = true)
                            void drop(Handle handle);
                            void local();
                        """),
                ONE_TO_ONE.get("api/Validating.java").replace("    public void local() {}", """
                            protected abstract void doDrop(S handle);
                            public void drop(Handle handle) { doDrop(null); }
                            public void local() {}
                        """));
        String client = Files.readString(compilation.generated.resolve("client/ClientCalls.java"));
        assertTrue(
                client.contains("    abstract boolean closing();")
                        && client.contains("protected final void doDrop(S handle) {\n"
                                + "        if (!closing()) {\n"
                                + "            connection().send((encoder, requestId) -> encoder.drop(requestId, true,"
                                + " handleId(handle)));\n"
                                + "        }\n"
                                + "    }"),
                "the client sends nothing while its vGPU closes:\n" + client);
        assertTrue(
                client.contains("protected final void doMark(S handle, long value) {\n" + "        connection().send("),
                "a call that destroys nothing is sent while closing too:\n" + client);
        String worker = Files.readString(compilation.generated.resolve("worker/WorkerCalls.java"));
        assertTrue(
                worker.contains("    abstract void forgetHandle(int id);")
                        && worker.contains("            gpu().drop(handle(handleId));\n"
                                + "            forgetHandle(handleId);\n"
                                + "            if (!frame.isAsync()) {"),
                "the worker forgets the id once the call succeeded:\n" + worker);
    }

    @Test
    void aDestroyingCallTakesOneHandleAndReturnsNothing() throws IOException {
        assertReadMarkedRefused(
                "destroys", "a call that destroys takes the one handle it destroys and returns nothing");
    }

    /** A call {@code int read(Handle, int)} marked {@code @RemoteCall(..., attribute = true)} fails the build with {@code error}. */
    private void assertReadMarkedRefused(String attribute, String error) throws IOException {
        Compilation compilation = compileOneToOne(
                "", ONE_TO_ONE.get("api/Device.java").replace("    void local();", """
                            @RemoteCall(opcode = 0x0030, kind = Call.Kind.SYNC, %s = true)
                            int read(Handle handle, int offset);
                            void local();
                        """.formatted(attribute)));
        assertFalse(compilation.success);
        assertTrue(compilation.errors.contains(error), compilation.errors.toString());
    }

    @Test
    void aCreatingCallSendsTheIdTheClientChoseAndTheWorkerRegistersItsHandleUnderIt() throws IOException {
        Compilation compilation = compileOneToOne(
                "",
                ONE_TO_ONE.get("api/Device.java").replace("    void local();", """
                            @RemoteCall(opcode = 0x0030, kind = Call.Kind.ASYNC, destroys = true)
                            void drop(Handle handle);
                            @RemoteCall(opcode = 0x0031, kind = Call.Kind.ASYNC, creates = true)
                            Handle make(Handle from, long size);
                            void local();
                        """),
                ONE_TO_ONE.get("api/Validating.java").replace("    public void local() {}", """
                            protected abstract void doDrop(S handle);
                            protected abstract S doMake(S from, long size);
                            public void drop(Handle handle) { doDrop(null); }
                            public Handle make(Handle from, long size) { doMake(null, size); return null; }
                            public void local() {}
                        """));
        String opcodes = Files.readString(compilation.generated.resolve("wire/Opcode.java"));
        assertTrue(
                opcodes.contains("{@code int32 from id, int32 handle id (chosen by the client), int64 size}."),
                "the chosen id follows the handles the call takes, and the result does not travel:\n" + opcodes);
        String client = Files.readString(compilation.generated.resolve("client/ClientCalls.java"));
        assertTrue(
                client.contains("    abstract int newId();")
                        && client.contains("    abstract S createdHandle(int id);")
                        && client.contains("protected final S doMake(S from, long size) {\n"
                                + "        int handleId = newId();\n"
                                + "        connection().send((encoder, requestId) -> encoder.make(requestId, true,"
                                + " handleId(from), handleId, size));\n"
                                + "        return createdHandle(handleId);\n"
                                + "    }"),
                "the client sends the id it chose and makes its object of it without waiting:\n" + client);
        String worker = Files.readString(compilation.generated.resolve("worker/WorkerCalls.java"));
        assertTrue(
                worker.contains("    abstract void registerHandle(int id, Handle handle);")
                        && worker.contains(
                                "public final void make(Frame frame, int fromId, int handleId, long size) {\n"
                                        + "        try {\n"
                                        + "            Handle created = gpu().make(handle(fromId), size);\n"
                                        + "            try {\n"
                                        + "                registerHandle(handleId, created);\n"
                                        + "            } catch (RuntimeException taken) {\n"
                                        + "                try {\n"
                                        + "                    gpu().drop(created);\n"
                                        + "                } catch (RuntimeException undo) {\n"
                                        + "                    taken.addSuppressed(undo);\n"
                                        + "                }\n"
                                        + "                throw taken;\n"
                                        + "            }\n"
                                        + "            if (!frame.isAsync()) {"),
                "the worker registers the new handle under the client's id and destroys it when that fails:\n"
                        + worker);
    }

    @Test
    void aCreatingCallWhoseHandlesNoCallDestroysRegistersItsHandleAlone() throws IOException {
        Compilation compilation = compileOneToOne(
                "",
                ONE_TO_ONE.get("api/Device.java").replace("    void local();", """
                            @RemoteCall(opcode = 0x0031, kind = Call.Kind.SYNC, creates = true)
                            Handle make(Handle from, long size);
                            void local();
                        """),
                ONE_TO_ONE.get("api/Validating.java").replace("    public void local() {}", """
                            protected abstract S doMake(S from, long size);
                            public Handle make(Handle from, long size) { doMake(null, size); return null; }
                            public void local() {}
                        """));
        String worker = Files.readString(compilation.generated.resolve("worker/WorkerCalls.java"));
        assertTrue(
                worker.contains("            Handle created = gpu().make(handle(fromId), size);\n"
                        + "            registerHandle(handleId, created);\n"
                        + "            reply().ok(frame.requestId());\n"),
                "nothing to destroy, and a synchronous creation is answered OK without its result:\n" + worker);
        String client = Files.readString(compilation.generated.resolve("client/ClientCalls.java"));
        assertTrue(
                client.contains("handleId(from), handleId, size), ReplyDecoder::empty);\n"
                        + "        return createdHandle(handleId);"),
                "a synchronous creation waits for its OK:\n" + client);
    }

    @Test
    void aCreatingCallsIdTakesNoNameOfAnotherField() throws IOException {
        Compilation compilation = compileOneToOne(
                "",
                ONE_TO_ONE.get("api/Device.java").replace("    void local();", """
                            @RemoteCall(opcode = 0x0031, kind = Call.Kind.ASYNC, creates = true)
                            Handle make(Handle handle);
                            void local();
                        """),
                ONE_TO_ONE.get("api/Validating.java").replace("    public void local() {}", """
                            protected abstract S doMake(S handle);
                            public Handle make(Handle handle) { doMake(null); return null; }
                            public void local() {}
                        """));
        assertFalse(compilation.success);
        assertTrue(
                compilation.errors.contains("the id the client chooses for what the call creates travels as"
                        + " handleId, the name of another of its fields: rename that parameter"),
                compilation.errors.toString());
    }

    @Test
    void aCreatingCallReturnsAHandle() throws IOException {
        assertReadMarkedRefused(
                "creates", "a call that creates returns the handle of what it creates, and destroys nothing");
    }

    @Test
    void anEnumWithoutACodecOfItsOwnTravelsByItsInterfacesCodec() throws IOException {
        Map<String, String> sources = new java.util.HashMap<>(WIRE);
        sources.putAll(ONE_TO_ONE);
        sources.put("api/Numbered.java", """
                package api;
                public interface Numbered { int number(); }
                """);
        sources.put("api/Level.java", """
                package api;
                public enum Level implements Numbered { LOW, HIGH; public int number() { return ordinal() + 7; } }
                """);
        sources.put("api/Device.java", """
                package api;
                import org.vgpu.runtime.api.surface.Call;
                import org.vgpu.runtime.api.surface.RemoteCall;
                public interface Device {
                    @RemoteCall(opcode = 0x0021, kind = Call.Kind.SYNC)
                    Level raise(Level level, long value);
                }
                """);
        sources.put("api/Validating.java", """
                package api;
                public abstract class Validating<S> implements Device {
                    protected abstract Level doRaise(Level level, long value);
                    public Level raise(Level level, long value) { return doRaise(level, value); }
                }
                """);
        sources.put("wire/Calls.java", """
                package wire;
                import org.vgpu.runtime.api.surface.CallSurface;
                @CallSurface(codecs = Codecs.class, api = api.Device.class, validation = api.Validating.class,
                        client = "client.ClientCalls", worker = "worker.WorkerCalls")
                interface Calls {}
                """);
        sources.put("wire/Codecs.java", """
                package wire;
                import io.netty.buffer.ByteBuf;
                final class Codecs {
                    static long readInt64(ByteBuf in) { return 0; }
                    static void writeInt64(ByteBuf out, long value) {}
                    static <E extends Enum<E> & api.Numbered> E readNumbered(ByteBuf in, Class<E> type) { return null; }
                    static void writeNumbered(ByteBuf out, api.Numbered value) { out.writeInt(value.number()); }
                }
                """);
        Compilation compilation = compile(sources);
        String dispatch = Files.readString(compilation.generated.resolve("wire/RequestDispatch.java"));
        assertTrue(
                dispatch.contains("Level level = Codecs.readNumbered(in, api.Level.class);"),
                "the generic reader is given the enum's class:\n" + dispatch);
        String encoder = Files.readString(compilation.generated.resolve("wire/RequestEncoder.java"));
        assertTrue(
                encoder.contains("Level level, long value)") && encoder.contains("Codecs.writeNumbered(out, level);"),
                "the encoder takes the enum itself and writes it by the interface's codec:\n" + encoder);
        String results = Files.readString(compilation.generated.resolve("wire/ResultDecoder.java"));
        assertTrue(
                results.contains("in -> Codecs.readNumbered(in, api.Level.class)"),
                "the result is read by the generic reader too:\n" + results);
    }

    @Test
    void constantNamesAreTheMethodNamesInUpperSnakeCase() {
        assertEquals("MEM_ALLOC_AT", WireTable.constantName("memAllocAt"));
        assertEquals("STREAM_WAIT_EVENT", WireTable.constantName("streamWaitEvent"));
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
