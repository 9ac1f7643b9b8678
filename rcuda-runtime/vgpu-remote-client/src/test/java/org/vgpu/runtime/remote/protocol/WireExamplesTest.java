package org.vgpu.runtime.remote.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VaWindow;

/**
 * The C header the build writes ({@code META-INF/vgpu/vgpu_wire.h}) against the protocol it describes, and the golden
 * frames a peer in C checks its encoders against: a few requests encoded by {@link RequestEncoder}, written as hex to
 * {@code META-INF/vgpu/wire-examples.txt} beside the header, one line each ({@code NAME field=value ... : hex}).
 */
class WireExamplesTest {
    private static final String HEADER = "META-INF/vgpu/vgpu_wire.h";
    private static final String EXAMPLES = "META-INF/vgpu/wire-examples.txt";
    private static final long BASE = VaWindow.forVgpu(0).base();

    private record Example(String line, byte[] frame) {}

    private static Example example(Opcode opcode, String fields, Consumer<RequestEncoder> encode) {
        ByteBuf out = Unpooled.buffer();
        try {
            encode.accept(new RequestEncoder().wrap(out));
            return new Example(opcode.name() + " " + fields, ByteBufUtil.getBytes(out));
        } finally {
            out.release();
        }
    }

    private static List<Example> examples() {
        MemorySegment data = MemorySegment.ofArray(new byte[] {1, 2, 3, 4});
        List<Example> examples = new ArrayList<>();
        examples.add(example(
                Opcode.HELLO,
                "requestId=1 version=" + Frames.PROTOCOL_VERSION + " vgpu=1 base=0x"
                        + Long.toHexString(VaWindow.forVgpu(1).base())
                        + " size=0x" + Long.toHexString(VaWindow.DEFAULT_SIZE) + " token=\"\"",
                e -> e.hello(1, new Hello(Frames.PROTOCOL_VERSION, "", VaWindow.forVgpu(1)))));
        examples.add(example(
                Opcode.MEM_ALLOC_AT,
                "requestId=2 address=0x" + Long.toHexString(BASE) + " bytes=4096",
                e -> e.memAllocAt(2, BASE, 4096)));
        examples.add(example(
                Opcode.MEMCPY_HTOD,
                "requestId=3 flags=0 streamId=0 dst=0x" + Long.toHexString(BASE) + " data=01020304",
                e -> e.memcpyHtoDChunk(3, false, false, 0, BASE, data, 0, 4)));
        examples.add(example(
                Opcode.MEMCPY_DTOH,
                "requestId=4 flags=ASYNC streamId=5 src=0x" + Long.toHexString(BASE) + " bytes=4096 chunkBytes=1048576",
                e -> e.memcpyDtoH(4, true, 5, BASE, 4096, 1 << 20)));
        examples.add(example(
                Opcode.MEMSET,
                "requestId=5 flags=0 streamId=0 dst=0x" + Long.toHexString(BASE) + " value=127 elementSize=1 count=256",
                e -> e.memset(5, false, 0, BASE, 127, 1, 256)));
        examples.add(example(
                Opcode.MODULE_GET_FUNCTION,
                "requestId=6 moduleId=1 functionId=2 kernelName=\"vectorAdd\"",
                e -> e.moduleGetFunction(6, 1, 2, "vectorAdd")));
        examples.add(example(
                Opcode.FUNC_GET_ATTRIBUTE,
                "requestId=7 functionId=2 attribute=MAX_THREADS_PER_BLOCK(0)",
                e -> e.funcGetAttribute(7, 2, FunctionAttribute.MAX_THREADS_PER_BLOCK)));
        examples.add(example(
                Opcode.LAUNCH_KERNEL,
                "requestId=8 flags=ASYNC functionId=2 grid=4,1,1 block=256,1,1 sharedMemBytes=0 streamId=0"
                        + " args=pointer:0x" + Long.toHexString(BASE) + ",i32:1024,f32:2.5",
                e -> e.launchKernel(
                        8,
                        true,
                        2,
                        new Dim3(4, 1, 1),
                        new Dim3(256, 1, 1),
                        0,
                        0,
                        KernelArgs.builder().pointer(BASE).i32(1024).f32(2.5f).build())));
        examples.add(
                example(Opcode.STREAM_CREATE, "requestId=9 flags=ASYNC streamId=5", e -> e.streamCreate(9, true, 5)));
        examples.add(example(Opcode.GOODBYE, "requestId=10", e -> e.goodbye(10)));
        return examples;
    }

    private static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }

    private static String header() throws IOException {
        try (InputStream in = WireExamplesTest.class.getClassLoader().getResourceAsStream(HEADER)) {
            assertTrue(in != null, HEADER + " is among the classes");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void theHeaderDefinesEveryOpcodeAndTheFramesConstantsAndDescribesEveryField() throws IOException {
        String header = header();
        for (Opcode opcode : Opcode.values()) {
            String define = String.format("#define VGPU_OP_%s 0x%04X\n", opcode.name(), opcode.code());
            assertTrue(header.contains(define), define + " in\n" + header);
        }
        assertTrue(
                header.contains("#define VGPU_WIRE_MAGIC 0x"
                        + Integer.toHexString(Frames.MAGIC).toUpperCase(Locale.ROOT) + " "),
                header);
        assertTrue(header.contains("#define VGPU_WIRE_PROTOCOL_VERSION " + Frames.PROTOCOL_VERSION + " "), header);
        assertTrue(header.contains("#define VGPU_WIRE_HEADER_BYTES " + Frames.HEADER_BYTES + " "), header);
        assertTrue(
                header.contains("#define VGPU_WIRE_MAX_BODY_BYTES 0x"
                        + Integer.toHexString(Frames.MAX_BODY_BYTES).toUpperCase(Locale.ROOT) + " "),
                header);
        assertTrue(header.contains("#define VGPU_WIRE_FLAG_ASYNC " + Frames.FLAG_ASYNC + " "), header);
        assertTrue(header.contains("#define VGPU_WIRE_ARG_BYTES " + WireCodecs.ARG_BYTES + " "), header);
        assertFalse(
                header.contains("LAYOUT NOT DESCRIBED"),
                "every codec of WireCodecs declares its @WireLayout: " + header);
    }

    @Test
    void aFrameIsItsHeaderThenItsFieldsBigEndianAsTheHeaderSays() {
        Example alloc = examples().get(1);
        assertEquals(
                "00000018" + "0040" + "0000" + "00000002" + String.format("%016x", BASE) + "0000000000001000",
                hex(alloc.frame()),
                "int32 length (8 + 16), uint16 opcode, uint16 flags, int32 request id, int64 address, int64 bytes");
        Example copy = examples().get(2);
        assertEquals(
                "00000018" + "0050" + "0000" + "00000003" + "00000000" + String.format("%016x", BASE) + "01020304",
                hex(copy.frame()),
                "the last chunk (no FLAG_MORE): int32 stream id, int64 destination, rest: the bytes");
    }

    @Test
    void theGoldenFramesAreWrittenBesideTheHeader() throws IOException, URISyntaxException {
        Path classes = Path.of(
                Opcode.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> lines = examples().stream()
                .map(example -> example.line() + " : " + hex(example.frame()))
                .toList();
        Path file = classes.resolve(EXAMPLES);
        Files.createDirectories(file.getParent());
        Files.write(file, lines, StandardCharsets.UTF_8);

        String header = header();
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            String name = line.substring(0, line.indexOf(' '));
            assertTrue(header.contains("#define VGPU_OP_" + name + " "), line);
            assertTrue(line.matches("[A-Z_]+ .* : ([0-9a-f]{2})+"), line);
        }
        assertEquals(10, lines.size());
    }
}
