package org.vgpu.runtime.remote.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import java.util.logging.Logger;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelNames;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;

/**
 * The frame codec on an {@link EmbeddedChannel}: every opcode survives encode and decode with its
 * fields and flags, however the bytes are split; truncated, oversized and garbage input is one
 * clear VGPU_PROTOCOL_ERROR, after which the rest is discarded; and no buffer leaks (Netty's
 * paranoid leak detector watches every test here).
 */
@ExtendWith(NettyLeaks.class)
class FrameCodecTest {
    private static final long BASE = VaWindow.forVgpu(3).base();

    // ---- round trips

    @Test
    void everyRequestSurvivesEncodeAndDecode() {
        ByteBuf wire = Unpooled.buffer();
        RequestEncoder encoder = new RequestEncoder().wrap(wire);
        encoder.hello(1, new Hello(Frames.OLDEST_PROTOCOL_VERSION, "v1.tok.en", VaWindow.forVgpu(3)));
        encoder.ping(2);
        encoder.memGetInfo(3);
        encoder.moduleLoad(4, 7, ".version 8.0".getBytes(StandardCharsets.US_ASCII));
        encoder.moduleGetFunction(5, 7, 11, "saxpy");
        encoder.memAllocAt(6, BASE, 4096);
        encoder.memcpyHtoDChunk(7, false, true, 0, BASE, MemorySegment.ofArray(new byte[] {1, 2, 3, 4}), 1, 2);
        encoder.memcpyHtoDChunkHeader(7, false, false, 0, BASE + 2, 1);
        wire.writeByte(9);
        encoder.memcpyDtoH(8, true, 5, BASE, 1 << 20, 65536);
        encoder.memcpyDtoD(9, false, 0, BASE + 64, BASE, 64);
        encoder.memset(10, true, 5, BASE, 0xCAFEBABE, 4, 16);
        encoder.launchKernel(
                11,
                true,
                11,
                Dim3.of(2, 3),
                Dim3.of(128),
                256,
                5,
                KernelArgs.builder()
                        .pointer(BASE)
                        .i32(-4)
                        .i64(1L << 40)
                        .f32(1.5f)
                        .f64(-2.25)
                        .bytes(new byte[] {8, 9})
                        .build());
        encoder.streamCreate(12, true, 5);
        encoder.streamSynchronize(13, 5);
        encoder.streamDestroy(14, true, 5);
        encoder.eventCreate(15, true, 2);
        encoder.eventRecord(16, true, 2, 5);
        encoder.eventSynchronize(17, 2);
        encoder.eventElapsedTime(18, 2, 3);
        encoder.eventDestroy(19, true, 2);
        encoder.ctxSynchronize(20);
        encoder.moduleUnload(21, 7);
        encoder.memFree(22, BASE);
        encoder.goodbye(23);
        encoder.memcpyDtoHGather(
                24,
                true,
                5,
                65536,
                List.of(new DeviceRegion(BASE, 4096), new DeviceRegion(BASE + 8192, 0), new DeviceRegion(BASE + 3, 1)));
        encoder.memcpyDtoHGather(25, false, 0, 4096, List.of());
        encoder.memcpyHtoDScatterChunk(
                26,
                true,
                true,
                5,
                List.of(new DeviceRegion(BASE, 2), new DeviceRegion(BASE + 64, 0)),
                MemorySegment.ofArray(new byte[] {1, 2, 3}),
                1,
                2);
        encoder.memcpyHtoDScatterChunkHeader(26, true, false, 5, List.of(new DeviceRegion(BASE + 128, 1)), 1);
        wire.writeByte(9);
        encoder.streamWaitEvent(27, true, 5, 2);
        encoder.streamQuery(28, 5);
        encoder.eventQuery(29, 2);
        encoder.deviceGetAttribute(30, DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        encoder.memset(31, false, 0, BASE + 2, 0xBEEF, 2, 8);
        encoder.funcGetAttribute(32, 11, FunctionAttribute.NUM_REGS);
        encoder.funcSetAttribute(33, 11, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536);
        encoder.moduleGetGlobal(34, 7, "coefficients");
        encoder.ctxSetLimit(35, ContextLimit.MALLOC_HEAP_SIZE, 64L << 20);
        encoder.ctxGetLimit(36, ContextLimit.STACK_SIZE);
        encoder.memsetD2D32(37, BASE + 64, 4096, 0xCAFE, 7, 3);
        encoder.memsetD2D32Async(38, true, BASE, 64, -1, 2, 2, 5);
        encoder.memAllocAllAt(
                39, List.of(new DeviceRegion(BASE, 1 << 21), new DeviceRegion(BASE + (4 << 20), 3 << 20)));

        RecordingVisitors.Requests visitor = new RecordingVisitors.Requests();
        for (Frame frame : decodeAll(Opcode.Direction.REQUEST, wire)) {
            dispatchAndRelease(frame, f -> RequestDispatch.dispatch(f, visitor));
        }
        assertEquals(
                List.of(
                        "#1 hello v1 vGPU 3 window [0x10c000000000, 0x110000000000) token=v1.tok.en",
                        "#2 ping",
                        "#3 memGetInfo",
                        "#4 moduleLoad 7 .version 8.0",
                        "#5 moduleGetFunction 7 11 saxpy",
                        "#6 memAllocAt 0x10c000000000 4096",
                        "#7 more memcpyHtoD s0 0x10c000000000 0203",
                        "#7 memcpyHtoD s0 0x10c000000002 09",
                        "#8 async memcpyDtoH s5 0x10c000000000 1048576 chunk 65536",
                        "#9 memcpyDtoD s0 0x10c000000040 0x10c000000000 64",
                        "#10 async memset s5 0x10c000000000 0xffffffffcafebabe x4 16",
                        "#11 async launch fn11 Dim3[x=2, y=3, z=1] Dim3[x=128, y=1, z=1] shared 256 s5 [Pointer[address="
                                + BASE
                                + "], I32[value=-4], I64[value=1099511627776], F32[value=1.5], F64[value=-2.25], Bytes[8, 9]]",
                        "#12 async streamCreate 5",
                        "#13 streamSynchronize 5",
                        "#14 async streamDestroy 5",
                        "#15 async eventCreate 2",
                        "#16 async eventRecord 2 s5",
                        "#17 eventSynchronize 2",
                        "#18 eventElapsedTime 2 3",
                        "#19 async eventDestroy 2",
                        "#20 ctxSynchronize",
                        "#21 moduleUnload 7",
                        "#22 memFree 0x10c000000000",
                        "#23 goodbye",
                        "#24 async memcpyDtoHGather s5 chunk 65536 [0x10c000000000+4096 0x10c000002000+0 0x10c000000003+1]",
                        "#25 memcpyDtoHGather s0 chunk 4096 []",
                        "#26 async more memcpyHtoDScatter s5 [0x10c000000000+2 0x10c000000040+0] 0203",
                        "#26 async memcpyHtoDScatter s5 [0x10c000000080+1] 09",
                        "#27 async streamWaitEvent s5 2",
                        "#28 streamQuery 5",
                        "#29 eventQuery 2",
                        "#30 deviceGetAttribute MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
                        "#31 memset s0 0x10c000000002 0xbeef x2 8",
                        "#32 funcGetAttribute fn11 NUM_REGS",
                        "#33 funcSetAttribute fn11 MAX_DYNAMIC_SHARED_SIZE_BYTES 65536",
                        "#34 moduleGetGlobal 7 coefficients",
                        "#35 ctxSetLimit MALLOC_HEAP_SIZE 67108864",
                        "#36 ctxGetLimit STACK_SIZE",
                        "#37 memsetD2D32 0x10c000000040 pitch 4096 0xcafe 7x3",
                        "#38 async memsetD2D32Async 0x10c000000000 pitch 64 0xffffffff 2x2 s5",
                        "#39 memAllocAllAt [0x10c000000000+2097152 0x10c000400000+3145728]"),
                visitor.calls);
    }

    /** The generated table keeps every opcode as released: they are what older peers send. */
    @Test
    void theOpcodeTableIsTheReleasedOne() {
        List<String> table = new ArrayList<>();
        for (Opcode opcode : Opcode.values()) {
            table.add(String.format(
                    "%s 0x%04X %s async=%s synchronizing=%s chunked=%s",
                    opcode,
                    opcode.code(),
                    opcode.direction(),
                    opcode.mayBeAsync(),
                    opcode.synchronizing(),
                    opcode.chunked()));
            assertEquals(opcode, Opcode.fromCode(opcode.code()));
        }
        assertEquals(
                List.of(
                        "HELLO 0x0001 REQUEST async=false synchronizing=false chunked=false",
                        "WELCOME 0x0002 REPLY async=false synchronizing=false chunked=false",
                        "PING 0x0003 REQUEST async=false synchronizing=false chunked=false",
                        "PONG 0x0004 REPLY async=false synchronizing=false chunked=false",
                        "GOODBYE 0x0005 REQUEST async=false synchronizing=false chunked=false",
                        "OK 0x0010 REPLY async=false synchronizing=false chunked=false",
                        "ERROR 0x0011 REPLY async=false synchronizing=false chunked=false",
                        "DATA 0x0012 REPLY async=false synchronizing=false chunked=true",
                        "MEM_GET_INFO 0x0020 REQUEST async=false synchronizing=false chunked=false",
                        "DEVICE_GET_ATTRIBUTE 0x0021 REQUEST async=false synchronizing=false chunked=false",
                        "MODULE_LOAD 0x0030 REQUEST async=false synchronizing=false chunked=false",
                        "MODULE_UNLOAD 0x0031 REQUEST async=false synchronizing=false chunked=false",
                        "MODULE_GET_FUNCTION 0x0032 REQUEST async=false synchronizing=false chunked=false",
                        "FUNC_GET_ATTRIBUTE 0x0033 REQUEST async=false synchronizing=false chunked=false",
                        "FUNC_SET_ATTRIBUTE 0x0034 REQUEST async=false synchronizing=false chunked=false",
                        "MODULE_GET_GLOBAL 0x0035 REQUEST async=false synchronizing=false chunked=false",
                        "MODULE_KERNEL_NAMES 0x0036 REQUEST async=false synchronizing=false chunked=false",
                        "MEM_ALLOC_AT 0x0040 REQUEST async=false synchronizing=false chunked=false",
                        "MEM_FREE 0x0041 REQUEST async=false synchronizing=false chunked=false",
                        "MEM_ALLOC_ALL_AT 0x0042 REQUEST async=false synchronizing=false chunked=false",
                        "MEMCPY_HTOD 0x0050 REQUEST async=true synchronizing=true chunked=true",
                        "MEMCPY_DTOH 0x0051 REQUEST async=true synchronizing=true chunked=false",
                        "MEMCPY_DTOD 0x0052 REQUEST async=true synchronizing=true chunked=false",
                        "MEMSET 0x0053 REQUEST async=true synchronizing=true chunked=false",
                        "MEMCPY_DTOH_GATHER 0x0054 REQUEST async=true synchronizing=true chunked=false",
                        "MEMCPY_HTOD_SCATTER 0x0055 REQUEST async=true synchronizing=true chunked=true",
                        "MEMSET_D2_D32 0x0056 REQUEST async=false synchronizing=true chunked=false",
                        "MEMSET_D2_D32_ASYNC 0x0057 REQUEST async=true synchronizing=false chunked=false",
                        "LAUNCH_KERNEL 0x0060 REQUEST async=true synchronizing=false chunked=false",
                        "STREAM_CREATE 0x0070 REQUEST async=true synchronizing=false chunked=false",
                        "STREAM_SYNCHRONIZE 0x0071 REQUEST async=false synchronizing=true chunked=false",
                        "STREAM_DESTROY 0x0072 REQUEST async=true synchronizing=false chunked=false",
                        "STREAM_WAIT_EVENT 0x0073 REQUEST async=true synchronizing=false chunked=false",
                        "STREAM_QUERY 0x0074 REQUEST async=false synchronizing=true chunked=false",
                        "EVENT_CREATE 0x0080 REQUEST async=true synchronizing=false chunked=false",
                        "EVENT_RECORD 0x0081 REQUEST async=true synchronizing=false chunked=false",
                        "EVENT_SYNCHRONIZE 0x0082 REQUEST async=false synchronizing=true chunked=false",
                        "EVENT_ELAPSED_TIME 0x0083 REQUEST async=false synchronizing=false chunked=false",
                        "EVENT_DESTROY 0x0084 REQUEST async=true synchronizing=false chunked=false",
                        "EVENT_QUERY 0x0085 REQUEST async=false synchronizing=true chunked=false",
                        "CTX_SYNCHRONIZE 0x0090 REQUEST async=false synchronizing=true chunked=false",
                        "CTX_SET_LIMIT 0x0091 REQUEST async=false synchronizing=false chunked=false",
                        "CTX_GET_LIMIT 0x0092 REQUEST async=false synchronizing=false chunked=false",
                        "HOST_REGION_CREATE 0x00A0 REQUEST async=false synchronizing=false chunked=false",
                        "HOST_REGION_FREE 0x00A1 REQUEST async=false synchronizing=false chunked=false",
                        "MEMCPY_HTOD_FROM_REGION 0x00A2 REQUEST async=true synchronizing=true chunked=false",
                        "MEMCPY_DTOH_TO_REGION 0x00A3 REQUEST async=true synchronizing=true chunked=false"),
                table);
        assertNull(Opcode.fromCode(0x0075));
        assertNull(Opcode.fromCode(0x7777));
    }

    @Test
    void everyReplySurvivesEncodeAndDecode() {
        DeviceProperties device = new DeviceProperties("NVIDIA H200", 141L << 30, 9, 0, 132, 1024, 32, false);
        ByteBuf wire = Unpooled.buffer();
        ReplyEncoder encoder = new ReplyEncoder().wrap(wire);
        encoder.welcome(1, new Welcome(Frames.OLDEST_PROTOCOL_VERSION, "node7-gpu2", 30_000, device));
        encoder.pong(2);
        encoder.ok(3);
        encoder.ok(4, new MemoryInfo(100, 200));
        encoder.ok(5, new KernelSignature("k", List.of(8, 4)));
        encoder.eventElapsedTime(6, 2.5f);
        encoder.error(7, new VgpuException(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, "kernel touched 0x10"));
        encoder.dataHeader(8, true, false, 0, 2);
        wire.writeBytes(new byte[] {5, 6});
        encoder.dataHeader(8, false, false, 2, 1);
        wire.writeByte(7);
        encoder.dataHeader(9, false, true, 0, 1);
        wire.writeByte(8);

        RecordingVisitors.Replies visitor = new RecordingVisitors.Replies();
        List<Frame> frames = decodeAll(Opcode.Direction.REPLY, wire);
        for (Frame frame : frames) {
            dispatchAndRelease(frame, f -> ReplyDecoder.dispatch(f, visitor));
        }
        assertEquals(
                List.of(
                        "#1 Welcome[protocolVersion=1, workerId=node7-gpu2, idleTimeoutMillis=30000, device=" + device
                                + ", sharedRegion=SharedRegionOffer[path=, nonce=0, note=the worker speaks protocol"
                                + " version 1], stripes=StripeOffer[none: the client did not offer stripes]]",
                        "#2 pong",
                        "#3 ok ",
                        "#4 ok 000000000000006400000000000000c8",
                        "#5 ok 00020000000800000004",
                        "#6 ok 40200000",
                        "#7 error CUDA_ERROR_ILLEGAL_ADDRESS kernel touched 0x10",
                        "#8 more data @0 0506",
                        "#8 data @2 07",
                        "#9 failure-kept data @0 08"),
                visitor.calls);
    }

    @Test
    void versionTwoCarriesTheOfferOfSharedMemoryAndTheAnswerToIt() {
        DeviceProperties device = new DeviceProperties("NVIDIA H200", 141L << 30, 9, 0, 132, 1024, 32, false);
        ByteBuf requests = Unpooled.buffer();
        new RequestEncoder().wrap(requests).hello(1, new Hello(2, "tok", VaWindow.forVgpu(3), true));
        new RequestEncoder().wrap(requests).hello(2, new Hello(2, "tok", VaWindow.forVgpu(3), false));
        List<Hello> hellos = new ArrayList<>();
        for (Frame frame : decodeAll(Opcode.Direction.REQUEST, requests)) {
            dispatchAndRelease(frame, f -> hellos.add(RequestDecoder.hello(f)));
        }
        assertEquals(
                List.of(true, false),
                hellos.stream().map(Hello::offersSharedMemory).toList());

        ByteBuf replies = Unpooled.buffer();
        SharedRegionOffer offer = new SharedRegionOffer("/dev/shm/vgpu-bulk-00", -5, "");
        new ReplyEncoder().wrap(replies).welcome(1, new Welcome(2, "w", 30_000, device, offer));
        new ReplyEncoder()
                .wrap(replies)
                .welcome(2, new Welcome(2, "w", 30_000, device, SharedRegionOffer.none("no /dev/shm")));
        RecordingVisitors.Replies visitor = new RecordingVisitors.Replies();
        for (Frame frame : decodeAll(Opcode.Direction.REPLY, replies)) {
            dispatchAndRelease(frame, f -> ReplyDecoder.dispatch(f, visitor));
        }
        assertEquals(
                List.of(
                        "#1 " + new Welcome(2, "w", 30_000, device, offer),
                        "#2 " + new Welcome(2, "w", 30_000, device, SharedRegionOffer.none("no /dev/shm"))),
                visitor.calls);
    }

    @Test
    void stripesAreOfferedInBitThreeAndTheOfferOfStripesWithoutLabelledChunksIsRefused() {
        ByteBuf requests = Unpooled.buffer();
        new RequestEncoder().wrap(requests).hello(1, new Hello(2, "tok", VaWindow.forVgpu(3), false, 3, -1));
        // the HELLO ends with its offers and the stripe count
        assertEquals(0x08, requests.getUnsignedByte(requests.writerIndex() - 2));
        assertEquals(3, requests.getUnsignedByte(requests.writerIndex() - 1));
        ByteBuf older = requests.copy().setByte(requests.writerIndex() - 2, 0x02);
        List<Hello> hellos = new ArrayList<>();
        for (Frame frame : decodeAll(Opcode.Direction.REQUEST, requests)) {
            dispatchAndRelease(frame, f -> hellos.add(RequestDecoder.hello(f)));
        }
        assertEquals(3, hellos.getFirst().stripes());
        for (Frame frame : decodeAll(Opcode.Direction.REQUEST, older)) {
            try {
                VgpuException refused = assertThrows(VgpuException.class, () -> RequestDecoder.hello(frame));
                assertEquals("HELLO offers unknown bulk paths 0x02", refused.detail());
            } finally {
                frame.release();
            }
        }
    }

    @Test
    void aFlagOfAChunkInASharedSlotIsOnlyForChunks() {
        ByteBuf wire = Unpooled.buffer();
        new RequestEncoder().wrap(wire).memGetInfo(1);
        Frames.addFlags(wire, 0, Frames.FLAG_IN_SLOT);
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        DecoderException e = assertThrows(DecoderException.class, () -> channel.writeInbound(wire));
        assertTrue(e.getMessage().contains("MEM_GET_INFO carries no chunk to put in a shared slot"), e.getMessage());
        channel.finishAndReleaseAll();
    }

    @Test
    void aResultTheApiRefusesIsTheWorkersProtocolErrorNotTheCallersInvalidValue() {
        // found by WireDecoderFuzzTest#replies: a MODULE_GET_GLOBAL result of -4 TiB raised CUDA_ERROR_INVALID_VALUE
        ByteBuf result = Unpooled.buffer().writeLong(BASE).writeLong(-4L << 40);
        try {
            assertProtocolError(
                    () -> ResultDecoder.moduleGetGlobal(result),
                    "result of MODULE_GET_GLOBAL holds an invalid value: region byte count must be >= 0");
        } finally {
            result.release();
        }
    }

    @Test
    void aKernelNameCountBeyondWhatTheResultHoldsIsTheWorkersProtocolError() {
        ByteBuf result = Unpooled.buffer().writeInt(1 << 20).writeInt(0);
        try {
            assertProtocolError(() -> ResultDecoder.moduleKernelNames(result), "1048576 kernel names in a body with 4");
        } finally {
            result.release();
        }
    }

    @Test
    void resultsOfOkRepliesReadBack() {
        ByteBuf wire = Unpooled.buffer();
        ReplyEncoder encoder = new ReplyEncoder().wrap(wire);
        encoder.ok(1, new MemoryInfo(123, 456));
        encoder.ok(2, new KernelSignature("vectorAdd", List.of(8, 8, 8, 4)));
        encoder.eventElapsedTime(3, 0.75f);
        encoder.streamQuery(5, false);
        encoder.streamQuery(6, true);
        encoder.eventQuery(7, false);
        encoder.deviceGetAttribute(8, 232448);
        encoder.funcGetAttribute(9, -1);
        encoder.moduleGetGlobal(10, new DeviceRegion(BASE + 256, 300));
        encoder.ctxGetLimit(11, 8L << 30);
        encoder.moduleKernelNames(12, new KernelNames(List.of("fft_forward", "fft_inverse")));
        encoder.ok(4);
        List<Object> results = new ArrayList<>();
        ReplyVisitor reader = new RecordingVisitors.Replies() {
            @Override
            @SuppressWarnings("ObjectToString") // empty() is Void, so always null: the list holds "null" for it
            public void ok(int requestId, ByteBuf result) {
                results.add(
                        switch (requestId) {
                            case 1 -> ReplyDecoder.memoryInfo(result);
                            case 2 -> ReplyDecoder.kernelSignature("vectorAdd", result);
                            case 3 -> ResultDecoder.eventElapsedTime(result);
                            case 5, 6 -> ResultDecoder.streamQuery(result);
                            case 7 -> ResultDecoder.eventQuery(result);
                            case 8 -> ResultDecoder.deviceGetAttribute(result);
                            case 9 -> ResultDecoder.funcGetAttribute(result);
                            case 10 -> ResultDecoder.moduleGetGlobal(result);
                            case 11 -> ResultDecoder.ctxGetLimit(result);
                            case 12 -> ResultDecoder.moduleKernelNames(result);
                            default -> String.valueOf(ReplyDecoder.empty(result));
                        });
            }
        };
        for (Frame frame : decodeAll(Opcode.Direction.REPLY, wire)) {
            dispatchAndRelease(frame, f -> ReplyDecoder.dispatch(f, reader));
        }
        assertEquals(
                List.of(
                        new MemoryInfo(123, 456),
                        new KernelSignature("vectorAdd", List.of(8, 8, 8, 4)),
                        0.75f,
                        false,
                        true,
                        false,
                        232448,
                        -1,
                        new DeviceRegion(BASE + 256, 300),
                        8L << 30,
                        new KernelNames(List.of("fft_forward", "fft_inverse")),
                        "null"),
                results);
        ByteBuf shortResult = Unpooled.buffer().writeLong(1);
        ByteBuf notABoolean = Unpooled.buffer().writeByte(2);
        try {
            assertProtocolError(() -> ReplyDecoder.memoryInfo(shortResult), "truncated");
            assertProtocolError(() -> ReplyDecoder.empty(shortResult), "too many");
            assertProtocolError(() -> ResultDecoder.streamQuery(notABoolean), "a boolean must be 0 or 1, got 2");
        } finally {
            shortResult.release();
            notABoolean.release();
        }
    }

    @Test
    void framesSplitAtEveryByteDecodeTheSame() {
        ByteBuf whole = Unpooled.buffer();
        RequestEncoder encoder = new RequestEncoder().wrap(whole);
        encoder.launchKernel(
                1,
                true,
                3,
                Dim3.of(1),
                Dim3.of(32),
                0,
                0,
                KernelArgs.builder().pointer(BASE).i32(5).build());
        encoder.memAllocAt(2, BASE, 1 << 21);
        encoder.ctxSynchronize(3);
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        while (whole.isReadable()) {
            channel.writeInbound(whole.readRetainedSlice(1));
        }
        whole.release();
        RecordingVisitors.Requests visitor = new RecordingVisitors.Requests();
        for (Frame frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
            dispatchAndRelease(frame, f -> RequestDispatch.dispatch(f, visitor));
        }
        assertFalse(channel.finish());
        assertEquals(3, visitor.calls.size(), visitor.calls.toString());
        assertTrue(visitor.calls.get(2).endsWith("ctxSynchronize"));
    }

    @Test
    void aLargeChunkArrivingInManyReadsKeepsItsBytesAndItsNeighbours() {
        byte[] data = new byte[3 * FrameDecoder.LARGE_FRAME_BYTES + 123];
        new Random(7).nextBytes(data);
        ByteBuf whole = Unpooled.buffer();
        RequestEncoder encoder = new RequestEncoder().wrap(whole);
        encoder.memAllocAt(1, BASE, data.length);
        encoder.memcpyHtoDChunk(2, false, false, 0, BASE, MemorySegment.ofArray(data), 0, data.length);
        encoder.ctxSynchronize(3);
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        while (whole.isReadable()) {
            channel.writeInbound(whole.readRetainedSlice(Math.min(whole.readableBytes(), 10_007)));
        }
        whole.release();
        List<String> seen = new ArrayList<>();
        for (Frame frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
            dispatchAndRelease(
                    frame,
                    f -> RequestDispatch.dispatch(f, new RecordingVisitors.Requests() {
                        @Override
                        public void memcpyHtoD(Frame chunk, int streamId, long dst, ByteBuf bytes) {
                            byte[] received = new byte[bytes.readableBytes()];
                            int at = 0;
                            for (ByteBuffer piece : bytes.nioBuffers()) {
                                int length = piece.remaining();
                                piece.get(received, at, length);
                                at += length;
                            }
                            seen.add("chunk of " + received.length
                                    + (Arrays.equals(data, received) ? " intact" : " CORRUPT") + " in "
                                    + bytes.nioBufferCount() + " pieces");
                        }

                        @Override
                        public void ctxSynchronize(Frame sync) {
                            seen.add("sync");
                        }

                        @Override
                        public void memAllocAt(Frame alloc, long address, long bytes) {
                            seen.add("alloc");
                        }
                    }));
        }
        assertFalse(channel.finish());
        assertEquals(3, seen.size(), seen.toString());
        assertEquals("alloc", seen.get(0));
        assertTrue(seen.get(1).startsWith("chunk of " + data.length + " intact in "), seen.get(1));
        assertFalse(seen.get(1).endsWith(" 1 pieces"), "gathered without merging: " + seen.get(1));
        assertEquals("sync", seen.get(2));
    }

    @Test
    void backToBackChunksAreGatheredFromTheReadsWithoutACopy() {
        int chunk = 200 << 10;
        ByteBuf whole = Unpooled.directBuffer();
        RequestEncoder encoder = new RequestEncoder().wrap(whole);
        byte[] data = new byte[chunk];
        new Random(11).nextBytes(data);
        for (int i = 0; i < 3; i++) {
            encoder.memcpyHtoDChunk(2, false, i < 2, 0, BASE + (long) i * chunk, MemorySegment.ofArray(data), 0, chunk);
        }
        long start = whole.memoryAddress();
        long end = start + whole.capacity();
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        // reads that straddle every chunk boundary, as a socket delivers a stream of chunks
        while (whole.isReadable()) {
            channel.writeInbound(whole.readRetainedSlice(Math.min(whole.readableBytes(), 150 << 10)));
        }
        whole.release();
        List<String> seen = new ArrayList<>();
        for (Frame frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
            dispatchAndRelease(
                    frame,
                    f -> RequestDispatch.dispatch(f, new RecordingVisitors.Requests() {
                        @Override
                        public void memcpyHtoD(Frame c, int streamId, long dst, ByteBuf bytes) {
                            byte[] received = new byte[bytes.readableBytes()];
                            boolean copied = false;
                            int at = 0;
                            for (ByteBuffer piece : bytes.nioBuffers()) {
                                long address = MemorySegment.ofBuffer(piece).address();
                                copied |= address < start || address + piece.remaining() > end;
                                int length = piece.remaining();
                                piece.get(received, at, length);
                                at += length;
                            }
                            seen.add(
                                    (Arrays.equals(data, received) ? "intact" : "CORRUPT") + (copied ? " copied" : ""));
                        }
                    }));
        }
        assertFalse(channel.finish());
        assertEquals(List.of("intact", "intact", "intact"), seen, "every chunk's bytes still lie where they were read");
    }

    // ---- broken streams

    @Test
    void aFrameCutShortByTheEndOfTheConnectionIsAProtocolError() {
        ByteBuf wire = Unpooled.buffer();
        new RequestEncoder().wrap(wire).memAllocAt(1, BASE, 4096);
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        channel.writeInbound(wire.retainedSlice(0, wire.readableBytes() - 3));
        wire.release();
        assertNull(channel.readInbound(), "nothing complete yet");
        DecoderException e = assertThrows(DecoderException.class, channel::finish);
        assertProtocolCause(e, "connection ended inside a frame: 25 of its 28 bytes arrived");
    }

    @Test
    void anOversizedFrameIsRefusedFromItsLengthAlone() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        DecoderException e = assertThrows(
                DecoderException.class,
                () -> channel.writeInbound(Unpooled.buffer().writeInt(Frames.MAX_LENGTH + 1)));
        assertProtocolCause(e, "frame length " + (Frames.MAX_LENGTH + 1) + " is outside");
        assertFalse(channel.writeInbound(Unpooled.buffer().writeZero(1 << 16)), "what follows is discarded");
        assertFalse(channel.finish(), "and no second error at the end");
    }

    @Test
    void aLengthTooShortForAHeaderIsRefused() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REPLY));
        DecoderException e = assertThrows(
                DecoderException.class,
                () -> channel.writeInbound(Unpooled.buffer().writeInt(3).writeInt(0)));
        assertProtocolCause(e, "frame length 3 is outside");
        assertFalse(channel.finish());
    }

    @Test
    void garbageIsOneProtocolErrorAndTheRestIsDiscarded() {
        Random random = new Random(42);
        for (int round = 0; round < 200; round++) {
            byte[] garbage = new byte[1 + random.nextInt(256)];
            random.nextBytes(garbage);
            EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
            List<Throwable> errors = new ArrayList<>();
            int offset = 0;
            while (offset < garbage.length) {
                int piece = Math.min(garbage.length - offset, 1 + random.nextInt(32));
                try {
                    channel.writeInbound(Unpooled.wrappedBuffer(garbage, offset, piece));
                } catch (DecoderException e) {
                    errors.add(e);
                }
                offset += piece;
            }
            try {
                channel.finish();
            } catch (DecoderException e) {
                errors.add(e);
            }
            for (Frame frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
                // random bytes may form a valid frame; then its body must not reach a request decoder unchecked
                Frame decoded = frame;
                try {
                    RequestDispatch.dispatch(decoded, new RecordingVisitors.Requests());
                } catch (VgpuException e) {
                    assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code(), e.getMessage());
                } finally {
                    decoded.release();
                }
            }
            assertTrue(errors.size() <= 1, "at most one error per connection, got " + errors);
            for (Throwable error : errors) {
                assertProtocolCause((DecoderException) error, "");
            }
        }
    }

    @Test
    void headersThatBreakTheRulesAreRefused() {
        assertRefused(Opcode.Direction.REQUEST, rawFrame(0x7777, 0, 1), "unknown opcode 0x7777");
        assertRefused(
                Opcode.Direction.REQUEST, rawFrame(Opcode.OK.code(), 0, 1), "OK is a reply frame, expected a request");
        assertRefused(Opcode.Direction.REPLY, rawFrame(Opcode.CTX_SYNCHRONIZE.code(), 0, 1), "expected a reply");
        assertRefused(
                Opcode.Direction.REQUEST, rawFrame(Opcode.CTX_SYNCHRONIZE.code(), 0x80, 1), "unknown flags 0x0080");
        assertRefused(
                Opcode.Direction.REQUEST,
                rawFrame(Opcode.CTX_SYNCHRONIZE.code(), Frames.FLAG_ASYNC, 1),
                "CTX_SYNCHRONIZE cannot be asynchronous");
        assertRefused(
                Opcode.Direction.REQUEST,
                rawFrame(Opcode.MEMSET.code(), Frames.FLAG_MORE, 1),
                "MEMSET cannot be split into chunks");
        assertRefused(
                Opcode.Direction.REPLY,
                rawFrame(Opcode.OK.code(), Frames.FLAG_FAILURE_KEPT, 1),
                "only the last DATA chunk can say that a failure is kept, not OK");
        assertRefused(
                Opcode.Direction.REPLY,
                rawFrame(Opcode.DATA.code(), Frames.FLAG_FAILURE_KEPT | Frames.FLAG_MORE, 1),
                "only the last DATA chunk can say that a failure is kept, not DATA");
    }

    @Test
    void bodiesThatBreakTheLayoutAreRefused() {
        assertBodyRefused(rawFrame(Opcode.MEM_FREE.code(), 0, 1, 0, 0, 0, 1), "MEM_FREE body of 4 bytes is truncated");
        assertBodyRefused(
                rawFrame(Opcode.CTX_SYNCHRONIZE.code(), 0, 1, 9), "CTX_SYNCHRONIZE body has 1 bytes too many");
        assertBodyRefused(
                rawFrame(Opcode.HELLO.code(), 0, 1, 'H', 'T', 'T', 'P'), "does not start with the vgpu magic");
        ByteBuf badString =
                Unpooled.buffer().writeInt(1).writeInt(2).writeInt(1000).writeByte('x');
        assertBodyRefused(frame(Opcode.MODULE_GET_FUNCTION, badString), "string of 1000 bytes");
        ByteBuf zeroGrid = Unpooled.buffer()
                .writeInt(1)
                .writeInt(0)
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(0)
                .writeInt(0)
                .writeShort(0);
        // well framed, so not a protocol error: the launch fails, as on a local vGPU
        List<Frame> zeroGridFrames = decodeAll(Opcode.Direction.REQUEST, frame(Opcode.LAUNCH_KERNEL, zeroGrid));
        try {
            VgpuException zeroGridRefused = assertThrows(
                    VgpuException.class,
                    () -> RequestDispatch.dispatch(zeroGridFrames.get(0), new RecordingVisitors.Requests()));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, zeroGridRefused.code());
            assertTrue(
                    zeroGridRefused.getMessage().contains("grid (0, 1, 1) has a dimension below 1"),
                    zeroGridRefused.getMessage());
        } finally {
            zeroGridFrames.forEach(Frame::release);
        }
        ByteBuf badTag = Unpooled.buffer()
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(1)
                .writeInt(0)
                .writeInt(0)
                .writeShort(1)
                .writeByte(42);
        assertBodyRefused(frame(Opcode.LAUNCH_KERNEL, badTag), "argument 0 has unknown type tag 42");
        ByteBuf badElement = Unpooled.buffer()
                .writeInt(0)
                .writeLong(BASE)
                .writeInt(0)
                .writeByte(3)
                .writeLong(1);
        assertBodyRefused(frame(Opcode.MEMSET, badElement), "element size must be 1, 2 or 4, got 3");
        ByteBuf badChunk =
                Unpooled.buffer().writeInt(0).writeLong(BASE).writeLong(10).writeInt(0);
        assertBodyRefused(frame(Opcode.MEMCPY_DTOH, badChunk), "chunk size 0 is outside");
        ByteBuf gatherCountTooLarge = gather(4096, 2).writeLong(BASE).writeLong(16);
        assertBodyRefused(
                frame(Opcode.MEMCPY_DTOH_GATHER, gatherCountTooLarge), "names 2 regions in a table of 16 bytes");
        ByteBuf gatherCountTooSmall = gather(4096, 0).writeLong(BASE).writeLong(16);
        assertBodyRefused(
                frame(Opcode.MEMCPY_DTOH_GATHER, gatherCountTooSmall), "names 0 regions in a table of 16 bytes");
        assertBodyRefused(frame(Opcode.MEMCPY_DTOH_GATHER, gather(4096, -1)), "names -1 regions");
        ByteBuf gatherNegative =
                gather(4096, 2).writeLong(BASE).writeLong(16).writeLong(BASE).writeLong(-5);
        assertBodyRefused(frame(Opcode.MEMCPY_DTOH_GATHER, gatherNegative), "region 1 has byte count -5");
        ByteBuf gatherOverflow = gather(4096, 2)
                .writeLong(BASE)
                .writeLong(Long.MAX_VALUE)
                .writeLong(BASE)
                .writeLong(1);
        assertBodyRefused(frame(Opcode.MEMCPY_DTOH_GATHER, gatherOverflow), "beyond 2^63 bytes in all");
        assertBodyRefused(frame(Opcode.MEMCPY_DTOH_GATHER, gather(0, 0)), "MEMCPY_DTOH_GATHER chunk size 0 is outside");
        assertBodyRefused(
                frame(Opcode.MEMCPY_DTOH_GATHER, Unpooled.buffer().writeInt(0).writeInt(4096)),
                "MEMCPY_DTOH_GATHER body of 8 bytes is truncated");
        assertRefused(
                Opcode.Direction.REQUEST,
                rawFrame(Opcode.MEMCPY_DTOH_GATHER.code(), Frames.FLAG_MORE, 1),
                "MEMCPY_DTOH_GATHER cannot be split into chunks");
        ByteBuf scatterShort = Unpooled.buffer()
                .writeInt(0)
                .writeInt(1)
                .writeLong(BASE)
                .writeLong(4)
                .writeByte(1)
                .writeByte(2);
        assertBodyRefused(
                frame(Opcode.MEMCPY_HTOD_SCATTER, scatterShort),
                "MEMCPY_HTOD_SCATTER carries 2 bytes for pieces of 4 bytes");
        ByteBuf scatterLong = Unpooled.buffer()
                .writeInt(0)
                .writeInt(1)
                .writeLong(BASE)
                .writeLong(1)
                .writeByte(1)
                .writeByte(2);
        assertBodyRefused(frame(Opcode.MEMCPY_HTOD_SCATTER, scatterLong), "carries 2 bytes for pieces of 1 bytes");
        ByteBuf scatterTableCut =
                Unpooled.buffer().writeInt(0).writeInt(2).writeLong(BASE).writeLong(1);
        assertBodyRefused(
                frame(Opcode.MEMCPY_HTOD_SCATTER, scatterTableCut),
                "MEMCPY_HTOD_SCATTER names 2 regions in a table of 16 bytes");
        ByteBuf scatterTooMany = Unpooled.buffer().writeInt(0).writeInt(RequestDecoder.MAX_SCATTER_PIECES + 1);
        assertBodyRefused(frame(Opcode.MEMCPY_HTOD_SCATTER, scatterTooMany), "names 65537 pieces, outside [0, 65536]");
        ByteBuf scatterNegative =
                Unpooled.buffer().writeInt(0).writeInt(1).writeLong(BASE).writeLong(-1);
        assertBodyRefused(
                frame(Opcode.MEMCPY_HTOD_SCATTER, scatterNegative), "MEMCPY_HTOD_SCATTER region 0 has byte count -1");
        ByteBuf badWindow = Unpooled.buffer()
                .writeInt(Frames.MAGIC)
                .writeShort(1)
                .writeInt(0)
                .writeLong(12345)
                .writeLong(1);
        Frames.writeString(badWindow, "t");
        assertBodyRefused(frame(Opcode.HELLO, badWindow), "HELLO names an impossible window");
        assertBodyRefused(rawFrame(Opcode.OK.code(), 0, 1), Opcode.Direction.REPLY, "");
    }

    @Test
    void aScatterChunkNamingTooManyPiecesIsRefusedBeforeAnythingIsWritten() {
        ByteBuf wire = Unpooled.buffer();
        RequestEncoder encoder = new RequestEncoder().wrap(wire);
        VgpuException e = assertThrows(
                VgpuException.class,
                () -> encoder.memcpyHtoDScatterChunkHeader(
                        1,
                        true,
                        false,
                        0,
                        Collections.nCopies(RequestDecoder.MAX_SCATTER_PIECES + 1, new DeviceRegion(BASE, 0)),
                        0));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code());
        assertFalse(wire.isReadable());
        wire.release();
    }

    @Test
    void aGatherNamingMoreRegionsThanAFrameHoldsIsRefusedBeforeAnythingIsWritten() {
        ByteBuf wire = Unpooled.buffer();
        RequestEncoder encoder = new RequestEncoder().wrap(wire);
        VgpuException e = assertThrows(
                VgpuException.class,
                () -> encoder.memcpyDtoHGather(
                        1,
                        true,
                        0,
                        4096,
                        Collections.nCopies(RequestDecoder.MAX_GATHER_REGIONS + 1, new DeviceRegion(BASE, 1))));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code());
        assertFalse(wire.isReadable());
        encoder.memcpyDtoHGather(
                1, true, 0, 4096, Collections.nCopies(RequestDecoder.MAX_GATHER_REGIONS, new DeviceRegion(BASE, 1)));
        List<Frame> frames = decodeAll(Opcode.Direction.REQUEST, wire);
        assertEquals(1, frames.size(), "the largest gather fits one frame");
        frames.forEach(Frame::release);
    }

    @Test
    void errorRepliesCarryTheCudaErrorName() {
        ByteBuf wire = Unpooled.buffer();
        new ReplyEncoder().wrap(wire).error(9, ErrorCode.CUDA_ERROR_LAUNCH_FAILED, "x".repeat(20_000));
        int start = wire.writerIndex();
        // an error this build does not know, as a newer worker might send it
        ByteBuf body = Unpooled.buffer().writeInt(12345);
        Frames.writeString(body, "CUDA_ERROR_FROM_THE_FUTURE");
        Frames.writeString(body, "details");
        wire.writeInt(Frames.MIN_LENGTH + body.readableBytes())
                .writeShort(Opcode.ERROR.code())
                .writeShort(0)
                .writeInt(10)
                .writeBytes(body);
        body.release();
        assertTrue(wire.toString(0, start, StandardCharsets.US_ASCII).contains("CUDA_ERROR_LAUNCH_FAILED"));
        List<VgpuException> errors = new ArrayList<>();
        ReplyVisitor collector = new RecordingVisitors.Replies() {
            @Override
            public void error(int requestId, VgpuException failure) {
                errors.add(failure);
            }
        };
        for (Frame frame : decodeAll(Opcode.Direction.REPLY, wire)) {
            dispatchAndRelease(frame, f -> ReplyDecoder.dispatch(f, collector));
        }
        assertEquals(ErrorCode.CUDA_ERROR_LAUNCH_FAILED, errors.get(0).code());
        assertTrue(errors.get(0).detail().length() < 9000, "long details are cut");
        assertEquals(ErrorCode.CUDA_ERROR_UNKNOWN, errors.get(1).code());
        assertEquals(
                "CUDA_ERROR_FROM_THE_FUTURE (12345): details", errors.get(1).detail());
    }

    @Test
    void requestsBeyondTheFrameLimitAreRefusedWithoutAPartialFrame() {
        ByteBuf out = Unpooled.buffer();
        RequestEncoder encoder = new RequestEncoder().wrap(out);
        encoder.ping(1);
        int before = out.writerIndex();
        VgpuException image =
                assertThrows(VgpuException.class, () -> encoder.moduleLoad(2, 1, new byte[Frames.MAX_BODY_BYTES]));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, image.code());
        VgpuException arg = assertThrows(
                VgpuException.class,
                () -> encoder.launchKernel(
                        3,
                        true,
                        1,
                        Dim3.of(1),
                        Dim3.of(1),
                        0,
                        0,
                        KernelArgs.builder().bytes(new byte[70_000]).build()));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, arg.code());
        assertEquals(before, out.writerIndex(), "no partial frame is left behind");
        out.release();
    }

    @Test
    void leakDetectionIsArmed() {
        // Netty logs through java.util.logging here; keep the deliberate leak's report out of the build log
        Logger log = Logger.getLogger(ResourceLeakDetector.class.getName());
        boolean useParentHandlers = log.getUseParentHandlers();
        log.setUseParentHandlers(false);
        try {
            Unpooled.directBuffer(64).writeLong(1); // never released, on purpose
            List<String> leaks = List.of();
            for (int attempt = 0; attempt < 20 && leaks.isEmpty(); attempt++) {
                leaks = NettyLeaks.collect(1);
            }
            assertFalse(leaks.isEmpty(), "a buffer dropped without release must be reported");
        } finally {
            NettyLeaks.forget();
            log.setUseParentHandlers(useParentHandlers);
        }
    }

    @Test
    void anAttributeTheWorkerDoesNotAnswerIsRefused() {
        assertBodyRefused(
                frame(Opcode.DEVICE_GET_ATTRIBUTE, Unpooled.buffer().writeInt(9999)),
                "device attribute 9999 is not one this worker answers");
        assertBodyRefused(
                frame(
                        Opcode.FUNC_SET_ATTRIBUTE,
                        Unpooled.buffer().writeInt(1).writeInt(77).writeInt(0)),
                "function attribute 77 is not one this worker answers");
        assertBodyRefused(
                frame(Opcode.CTX_GET_LIMIT, Unpooled.buffer().writeInt(6)),
                "context limit 6 is not one this worker answers");
    }

    // ---- helpers

    private static List<Frame> decodeAll(Opcode.Direction direction, ByteBuf wire) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(direction));
        channel.writeInbound(wire);
        List<Frame> frames = new ArrayList<>();
        for (Frame frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
            frames.add(frame);
        }
        assertFalse(channel.finish(), "no bytes left over");
        return frames;
    }

    private static void dispatchAndRelease(Frame frame, Consumer<Frame> dispatch) {
        try {
            dispatch.accept(frame);
        } finally {
            frame.release();
        }
    }

    /** The start of a MEMCPY_DTOH_GATHER body on stream 0: chunk size and region count; the table is the caller's. */
    private static ByteBuf gather(int chunkBytes, int regions) {
        return Unpooled.buffer().writeInt(0).writeInt(chunkBytes).writeInt(regions);
    }

    private static ByteBuf rawFrame(int opcode, int flags, int requestId, int... body) {
        ByteBuf buf = Unpooled.buffer()
                .writeInt(Frames.MIN_LENGTH + body.length)
                .writeShort(opcode)
                .writeShort(flags)
                .writeInt(requestId);
        for (int b : body) {
            buf.writeByte(b);
        }
        return buf;
    }

    private static ByteBuf frame(Opcode opcode, ByteBuf body) {
        ByteBuf buf = Unpooled.buffer()
                .writeInt(Frames.MIN_LENGTH + body.readableBytes())
                .writeShort(opcode.code())
                .writeShort(0)
                .writeInt(1)
                .writeBytes(body);
        body.release();
        return buf;
    }

    private static void assertRefused(Opcode.Direction direction, ByteBuf wire, String expected) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(direction));
        DecoderException e = assertThrows(DecoderException.class, () -> channel.writeInbound(wire));
        assertProtocolCause(e, expected);
        assertFalse(channel.finish());
    }

    private static void assertBodyRefused(ByteBuf wire, String expected) {
        assertBodyRefused(wire, Opcode.Direction.REQUEST, expected);
    }

    private static void assertBodyRefused(ByteBuf wire, Opcode.Direction direction, String expected) {
        List<Frame> frames = decodeAll(direction, wire);
        assertEquals(1, frames.size());
        Frame frame = frames.get(0);
        try {
            if (direction == Opcode.Direction.REQUEST) {
                assertProtocolError(() -> RequestDispatch.dispatch(frame, new RecordingVisitors.Requests()), expected);
            } else {
                // an OK without a result is valid framing; an OK answering MEM_GET_INFO must hold 16 bytes
                ReplyDecoder.dispatch(frame, new RecordingVisitors.Replies() {
                    @Override
                    public void ok(int requestId, ByteBuf result) {
                        assertProtocolError(() -> ReplyDecoder.memoryInfo(result), "truncated");
                    }
                });
            }
        } finally {
            frame.release();
        }
    }

    private static void assertProtocolError(Runnable call, String expected) {
        VgpuException e = assertThrows(VgpuException.class, call::run);
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    private static void assertProtocolCause(DecoderException e, String expected) {
        VgpuException cause = assertInstanceOf(VgpuException.class, e.getCause());
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, cause.code());
        assertTrue(cause.getMessage().contains(expected), cause.getMessage());
    }
}
