package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.vgpu.common.error.NetworkException;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.NettyLeaks;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.RequestDecoder;

/**
 * A worker in this JVM, driven by a raw client that plays by the rules or does not: the worker
 * serves one authenticated session, re-validates every request, keeps asynchronous failures for
 * the next synchronizing request, ends the session on goodbye, silence, a vanished client or a
 * broken protocol, and always frees the vGPU. Connections that fail the handshake are refused
 * without costing the legitimate client its worker.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(NettyLeaks.class)
class GpuWorkerTest {
    static final String TOKEN = "secret";
    private static final long MEMORY = 1L << 30;
    private static final VaWindow WINDOW = VaWindow.forVgpu(2);

    private final EmulatedBackend backend = new EmulatedBackend(1, MEMORY, TestKernels.twins());
    private final List<String> log = new CopyOnWriteArrayList<>();
    private GpuWorker worker;

    @AfterEach
    void closeWorker() {
        if (worker != null) {
            worker.close();
        }
    }

    private void startWorker(Duration idleTimeout) {
        startWorker(idleTimeout, GpuWorker.Sessions.ONE);
    }

    private void startWorker(Duration idleTimeout, GpuWorker.Sessions sessions) {
        worker = startTestWorker(backend, idleTimeout, sessions, log);
    }

    /** A worker "test-worker" on a loopback port of its own that accepts the token {@value #TOKEN} alone. */
    static GpuWorker startTestWorker(
            EmulatedBackend backend, Duration idleTimeout, GpuWorker.Sessions sessions, List<String> log) {
        return GpuWorker.start(
                new WorkerConfig("127.0.0.1", 0, 0, "test-worker", idleTimeout),
                backend,
                (token, window) -> {
                    if (!TOKEN.equals(token)) {
                        throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "the token is not the secret");
                    }
                },
                null,
                log::add,
                sessions);
    }

    /** Waits until the worker logged a line containing {@code text}. */
    private void awaitLog(String text) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (log.stream().noneMatch(line -> line.contains(text))) {
            assertTrue(System.nanoTime() < deadline, () -> "the worker never logged '" + text + "': " + log);
            Thread.sleep(10);
        }
    }

    private RawClient connect() {
        return new RawClient("127.0.0.1", worker.address().getPort());
    }

    /** Free memory of the emulated device, which must be all of it once the worker freed the session's vGPU. */
    private long freeDeviceMemory() {
        try (VirtualGpu probe = backend.open(0, VaWindow.forVgpu(9))) {
            return probe.memGetInfo().free();
        }
    }

    @Test
    void aSessionIsServedAndReportedUntilGoodbye() throws Exception {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker", client.hello(1, TOKEN, WINDOW).read());
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, WINDOW.base(), 1 << 20)).read());
            assertEquals("#3 ok 16 bytes", client.send(e -> e.memGetInfo(3)).read());
            assertEquals("#0 pong", client.send(e -> e.ping(0)).read());
            assertEquals("#4 ok 0 bytes", client.send(e -> e.goodbye(4)).read());
            assertEquals("closed", client.read());
        }
        WorkerReport report = worker.awaitReport();
        assertTrue(report.clean(), report.toString());
        assertEquals(4, report.calls(), "HELLO, alloc, info and goodbye; pings are the event loop's");
        assertTrue(report.bytesIn() > 0 && report.bytesOut() > 0, report.toString());
        assertTrue(
                report.servedLine().matches("vgpu-worker served calls=4 bytes_in=\\d+ bytes_out=\\d+ busy_ms=\\d+"),
                report.servedLine());
        assertEquals(MEMORY, freeDeviceMemory());
    }

    @Test
    void garbageIsAProtocolErrorAndTheWorkerWaitsOnForItsClient() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient stranger = connect()) {
            String reply = stranger.sendBytes("GET / HTTP/1.1\r\nHost: gpu\r\n\r\n".getBytes())
                    .read();
            assertTrue(reply.startsWith("#0 error VGPU_PROTOCOL_ERROR: frame length"), reply);
            assertEquals("closed", stranger.read());
        }
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker", client.hello(1, TOKEN, WINDOW).read());
        }
        assertTrue(log.stream().anyMatch(line -> line.contains("refused")), log.toString());
    }

    @Test
    void aWrongTokenOrProtocolVersionIsRefused() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient intruder = connect()) {
            assertEquals(
                    "#1 error VGPU_AUTH_FAILED: the token is not the secret",
                    intruder.hello(1, "guess", WINDOW).read());
            assertEquals("closed", intruder.read());
        }
        try (RawClient future = connect()) {
            String reply = future.send(e -> e.hello(1, new Hello(Frames.PROTOCOL_VERSION + 1, TOKEN, WINDOW)))
                    .read();
            assertTrue(
                    reply.startsWith("#1 error VGPU_PROTOCOL_ERROR: the client speaks protocol version "
                            + (Frames.PROTOCOL_VERSION + 1) + ", worker test-worker speaks versions 1 to "
                            + Frames.PROTOCOL_VERSION),
                    reply);
        }
        try (RawClient noHello = connect()) {
            String reply = noHello.send(e -> e.ctxSynchronize(1)).read();
            assertTrue(reply.startsWith("#1 error VGPU_PROTOCOL_ERROR: a session must open with HELLO"), reply);
        }
        assertFalse(worker.report().isDone(), "the worker still waits for its client");
    }

    /** A lender's worker and a holder's alike: one session at a time (a local worker's is one per vGPU). */
    @ParameterizedTest
    @EnumSource(
            value = GpuWorker.Sessions.class,
            names = {"ONE", "ONE_AFTER_ANOTHER"})
    void aSecondSessionIsRefused(GpuWorker.Sessions sessions) {
        startWorker(Duration.ofSeconds(10), sessions);
        try (RawClient client = connect();
                RawClient second = connect()) {
            assertEquals(
                    "#1 welcome test-worker", client.hello(1, TOKEN, WINDOW).read());
            assertEquals(
                    "#1 error CUDA_ERROR_NOT_PERMITTED: worker test-worker already serves a session",
                    second.hello(1, TOKEN, VaWindow.forVgpu(3)).read());
            assertEquals("#2 ok 0 bytes", client.send(e -> e.ctxSynchronize(2)).read(), "the first session goes on");
        }
    }

    @Test
    void anAsynchronousFailureIsReportedOnceByTheNextSynchronizingRequest() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.launchKernel(2, true, 99, Dim3.of(1), Dim3.of(1), 0, 0, KernelArgs.none());
                e.memset(3, true, 0, WINDOW.base(), 0, 1, 16);
                e.memAllocAt(4, WINDOW.base(), 4096);
                e.ctxSynchronize(5);
                e.ctxSynchronize(6);
            });
            assertEquals("#4 ok 0 bytes", client.read(), "an allocation is no synchronizing call");
            assertEquals(
                    "#5 error CUDA_ERROR_INVALID_HANDLE: asynchronous LAUNCH_KERNEL (request 2) failed: function 99"
                            + " is not live in this session",
                    client.read(),
                    "the first failure, not the memset's");
            assertEquals("#6 ok 0 bytes", client.read(), "reported once");
        }
    }

    @Test
    void aLaunchWithAZeroGridOverTheWireIsOneInvalidValueAndTheSessionGoesOn() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            // no client of vgpu's can send this (Dim3 refuses it), so the frame is written by hand
            ByteBuf launch = Unpooled.buffer();
            int bodyBytes = 9 * Integer.BYTES + Short.BYTES;
            launch.writeInt(Frames.MIN_LENGTH + bodyBytes)
                    .writeShort(Opcode.LAUNCH_KERNEL.code())
                    .writeShort(Frames.FLAG_ASYNC)
                    .writeInt(2);
            launch.writeInt(1); // function
            launch.writeInt(0).writeInt(0).writeInt(0); // grid
            launch.writeInt(1).writeInt(1).writeInt(1); // block
            launch.writeInt(0).writeInt(0).writeShort(0); // shared memory, stream, no arguments
            client.sendBytes(ByteBufUtil.getBytes(launch));
            launch.release();
            assertEquals(
                    "#3 error CUDA_ERROR_INVALID_VALUE: asynchronous LAUNCH_KERNEL (request 2) failed:"
                            + " the launch's grid (0, 0, 0) has a dimension below 1",
                    client.send(e -> e.ctxSynchronize(3)).read());
            assertEquals("#4 ok 16 bytes", client.send(e -> e.memGetInfo(4)).read(), "the session goes on");
        }
    }

    @Test
    void theLastChunkOfAnAsynchronousCopySaysWhetherAFailureIsKept() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 4096);
                e.streamCreate(3, true, 7);
                e.memcpyDtoH(4, true, 7, WINDOW.base(), 4096, 1024);
                e.memset(5, true, 7, WINDOW.base() + (8 << 20), 0, 1, 16);
                e.memcpyDtoH(6, true, 7, WINDOW.base(), 4096, 4096);
                e.streamSynchronize(8, 7);
                e.memcpyDtoH(9, true, 7, WINDOW.base(), 16, 4096);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            for (int offset = 0; offset < 3072; offset += 1024) {
                assertEquals("#4 data@" + offset + " 1024 bytes more", client.read());
            }
            assertEquals("#4 data@3072 1024 bytes", client.read(), "nothing failed yet");
            assertEquals(
                    "#6 data@0 4096 bytes failure-kept", client.read(), "the memset's failure waits for a synchronize");
            String kept = client.read();
            assertTrue(
                    kept.startsWith("#8 error CUDA_ERROR_INVALID_VALUE: asynchronous MEMSET (request 5) failed"), kept);
            assertEquals("#9 data@0 16 bytes", client.read(), "reported, so no longer kept");
        }
    }

    @Test
    void anIdTheClientChoseTwiceOrTheDefaultStreamsIsRefusedAndTheFirstKeepsItsObject() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.streamCreate(2, false, 7);
                e.streamCreate(3, false, 7);
                e.streamCreate(4, false, 0);
                e.eventCreate(5, false, 9);
                e.eventCreate(6, false, 9);
                e.eventRecord(7, false, 9, 7);
                e.streamSynchronize(8, 7);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            assertEquals("#3 error CUDA_ERROR_INVALID_VALUE: stream id 7 is already in use", client.read());
            assertEquals("#4 error CUDA_ERROR_INVALID_VALUE: stream id 0 is the default stream", client.read());
            assertEquals("#5 ok 0 bytes", client.read());
            assertEquals("#6 error CUDA_ERROR_INVALID_VALUE: event id 9 is already in use", client.read());
            assertEquals("#7 ok 0 bytes", client.read(), "event 9 and stream 7 are the first ones");
            assertEquals("#8 ok 0 bytes", client.read());
        }
    }

    @Test
    void theWorkerRevalidatesEveryPointerItIsGiven() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 4096);
                e.memcpyDtoH(3, false, 0, WINDOW.base() + (8 << 20), 16, 4096);
                e.memcpyDtoD(4, false, 0, WINDOW.base(), VaWindow.forVgpu(3).base(), 16);
                e.memFree(5, WINDOW.base() + 64);
                e.memAllocAt(6, VaWindow.forVgpu(3).base(), 4096);
                e.memcpyDtoH(7, false, 0, WINDOW.base() + 4000, 200, 4096);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            for (int request = 3; request <= 7; request++) {
                String reply = client.read();
                assertTrue(reply.startsWith("#" + request + " error CUDA_ERROR_INVALID_VALUE"), reply);
            }
        }
    }

    @Test
    void aCopyFromTheDeviceFarBeyondItsAllocationIsOneErrorBeforeAnyWorkAndTheSessionGoesOn() {
        startWorker(Duration.ofSeconds(10));
        long exabytes = 1L << 62;
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 2 << 20);
                e.memcpyDtoH(3, false, 0, WINDOW.base(), exabytes, 1 << 20);
                e.memcpyDtoHGather(
                        4,
                        false,
                        0,
                        1 << 20,
                        List.of(new DeviceRegion(WINDOW.base(), 16), new DeviceRegion(WINDOW.base() + 16, exabytes)));
                e.memcpyDtoH(5, true, 0, WINDOW.base(), exabytes, 1 << 20);
                e.memcpyDtoH(6, false, 0, WINDOW.base(), 4, 4096);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            for (int request = 3; request <= 5; request++) {
                String reply = client.read();
                assertTrue(
                        reply.startsWith("#" + request + " error CUDA_ERROR_INVALID_VALUE")
                                && reply.contains("4611686018427387904 bytes"),
                        "one error, no DATA, naming the size: " + reply);
            }
            String failureKept = client.read();
            assertTrue(
                    failureKept.startsWith("#6 error CUDA_ERROR_INVALID_VALUE"),
                    "the asynchronous one's failure, kept for the next synchronous request: " + failureKept);
            assertEquals(
                    "#7 data@0 4 bytes [00000000]",
                    client.send(e -> e.memcpyDtoH(7, false, 0, WINDOW.base(), 4, 4096))
                            .read());
        }
    }

    @Test
    void aFrameLargerThanAHelloBeforeSignInIsRefusedAndClosedWhileTheSessionTakesFullFrames() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect();
                RawClient stranger = connect()) {
            assertEquals(
                    "#1 welcome test-worker", client.hello(1, TOKEN, WINDOW).read());
            // the header of a 15 MiB HELLO: refused from its length, before its body is buffered
            ByteBuf header = Unpooled.buffer().writeInt(Frames.MIN_LENGTH + (15 << 20));
            header.writeShort(Opcode.HELLO.code()).writeShort(0).writeInt(7);
            stranger.sendBytes(ByteBufUtil.getBytes(header));
            header.release();
            String refusal = stranger.read();
            assertTrue(
                    refusal.startsWith("#0 error VGPU_PROTOCOL_ERROR: frame length 15728648 is outside [8, "
                            + (Frames.MIN_LENGTH + RequestDecoder.MAX_HELLO_BODY_BYTES)
                            + "] before the client signed in (a HELLO is at most "
                            + RequestDecoder.MAX_HELLO_BODY_BYTES + " bytes)"),
                    refusal);
            assertEquals("closed", stranger.read());
            MemorySegment megabyte = MemorySegment.ofArray(new byte[1 << 20]);
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 1 << 20);
                e.memcpyHtoDChunk(3, false, false, 0, WINDOW.base(), megabyte, 0, 1 << 20);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            assertEquals("#3 ok 0 bytes", client.read(), "a signed-in client sends frames of the protocol's size");
        }
    }

    @Test
    void connectionsBeyondThoseAWorkerKeepsAreRefusedAndTheSessionGoesOn() throws Exception {
        startWorker(Duration.ofSeconds(10));
        List<RawClient> waiting = new ArrayList<>();
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker", client.hello(1, TOKEN, WINDOW).read());
            for (int i = 0; i < GpuWorker.MAX_CONNECTIONS_SIGNING_IN; i++) {
                waiting.add(connect());
            }
            try (RawClient oneTooMany = connect()) {
                assertEquals(
                        "#0 error CUDA_ERROR_NOT_PERMITTED: worker test-worker is busy: "
                                + GpuWorker.MAX_CONNECTIONS_SIGNING_IN
                                + " connections are already signing in; try again shortly",
                        oneTooMany.read());
                assertEquals("closed", oneTooMany.read());
            }
            assertEquals("#2 ok 16 bytes", client.send(e -> e.memGetInfo(2)).read());
            waiting.removeFirst().close();
            // once the worker saw that one close, a newcomer is heard: its HELLO meets the session, not the limit
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            String reply;
            do {
                try (RawClient newcomer = connect()) {
                    reply = newcomer.hello(1, TOKEN, WINDOW).read();
                }
            } while (reply.contains("busy") && System.nanoTime() < deadline);
            assertEquals("#1 error CUDA_ERROR_NOT_PERMITTED: worker test-worker already serves a session", reply);
            assertEquals("#3 ok 16 bytes", client.send(e -> e.memGetInfo(3)).read());
        } finally {
            waiting.forEach(RawClient::close);
        }
    }

    @Test
    void failedAcceptsAreToldInOneLineAndTheWorkerAcceptsAgain() throws Exception {
        startWorker(Duration.ofSeconds(10));
        Channel listening = worker.listeningChannel();
        // what a worker out of file descriptors sees: every accept fails
        listening
                .eventLoop()
                .submit(() -> {
                    for (int i = 0; i < 50; i++) {
                        listening
                                .pipeline()
                                .fireExceptionCaught(new IOException("accept(..) failed: Too many open files"));
                    }
                })
                .get();
        awaitLog("worker test-worker cannot accept connections: too many open files; it tries again every 1 s");
        assertEquals(
                1, log.stream().filter(line -> line.contains("cannot accept")).count(), log::toString);
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker", client.hello(1, TOKEN, WINDOW).read(), "accepting again");
        }
    }

    @Test
    void aChunkToTheDeviceThatRunsOutOfItsAllocationWritesNothing() {
        startWorker(Duration.ofSeconds(10));
        // three staging slots' worth: the first two would fit the allocation, the third not
        byte[] ones = new byte[3 << 20];
        Arrays.fill(ones, (byte) 1);
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 2 << 20);
                e.memcpyHtoDChunk(3, false, false, 0, WINDOW.base(), MemorySegment.ofArray(ones), 0, ones.length);
                e.memcpyHtoDScatterChunk(
                        4,
                        false,
                        false,
                        0,
                        List.of(
                                new DeviceRegion(WINDOW.base() + 16, 4),
                                new DeviceRegion(WINDOW.base() + (2 << 20), 4)),
                        MemorySegment.ofArray(ones),
                        0,
                        8);
                e.memcpyDtoH(5, false, 0, WINDOW.base(), 4, 4096);
                e.memcpyDtoH(6, false, 0, WINDOW.base() + 16, 4, 4096);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            for (int request = 3; request <= 4; request++) {
                String reply = client.read();
                assertTrue(reply.startsWith("#" + request + " error CUDA_ERROR_INVALID_VALUE"), reply);
            }
            assertEquals("#5 data@0 4 bytes [00000000]", client.read(), "no part of the copy was made");
            assertEquals("#6 data@0 4 bytes [00000000]", client.read(), "no piece of the scatter was written");
        }
    }

    @Test
    void aPeerThatHasNotSignedInWithinTheBoundIsClosedBeforeTheIdleTimeout() {
        // a holder's worker, which waits for its clients as long as it lives, with a long idle timeout
        startWorker(GpuWorker.SIGN_IN_BOUND.multipliedBy(2), GpuWorker.Sessions.ONE_AFTER_ANOTHER);
        try (RawClient slow = connect()) {
            long start = System.nanoTime();
            slow.sendBytes(new byte[] {0, 0, 1, 0}); // the start of a HELLO that never comes
            assertEquals(
                    "#0 error VGPU_AUTH_FAILED: worker test-worker closes the connection: no session was opened"
                            + " within 10000 ms of connecting",
                    slow.read());
            assertEquals("closed", slow.read());
            assertTrue(System.nanoTime() - start
                    < GpuWorker.SIGN_IN_BOUND.multipliedBy(2).toNanos());
        }
    }

    @Test
    void copiesTravelInChunksBothWays() {
        startWorker(Duration.ofSeconds(10));
        byte[] data = new byte[10_000];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 7);
        }
        MemorySegment source = MemorySegment.ofArray(data);
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), data.length);
                e.memcpyHtoDChunk(3, false, true, 0, WINDOW.base(), source, 0, 4096);
                e.memcpyHtoDChunk(3, false, true, 0, WINDOW.base() + 4096, source, 4096, 4096);
                e.memcpyHtoDChunk(3, false, false, 0, WINDOW.base() + 8192, source, 8192, data.length - 8192);
                e.memcpyDtoH(4, false, 0, WINDOW.base(), data.length, 4096);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            assertEquals("#3 ok 0 bytes", client.read(), "one answer after the last chunk");
            assertEquals("#4 data@0 4096 bytes more", client.read());
            assertEquals("#4 data@4096 4096 bytes more", client.read());
            assertEquals("#4 data@8192 1808 bytes", client.read());
        }
    }

    @Test
    void aDeviceToHostCopyThatRunsOutOfItsAllocationMidwayIsRefusedBeforeItsFirstChunkAndTheSessionGoesOn() {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 10_000);
                e.memcpyDtoH(3, false, 0, WINDOW.base(), 3 * 4096, 4096);
                e.memcpyDtoH(4, false, 0, WINDOW.base(), 10_000, 4096);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            String failure = client.read();
            assertTrue(failure.startsWith("#3 error CUDA_ERROR_INVALID_VALUE"), failure);
            assertEquals("#4 data@0 4096 bytes more", client.read());
            assertEquals("#4 data@4096 4096 bytes more", client.read());
            assertEquals("#4 data@8192 1808 bytes", client.read());
        }
    }

    @Test
    void aScatterInChunksWritesEachPieceAndAnotherCopyInsideItBreaksTheProtocol() throws Exception {
        startWorker(Duration.ofSeconds(10));
        byte[] packed = {1, 2, 3, 4, 5, 6};
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 8192);
                e.memcpyHtoDScatterChunk(
                        3,
                        false,
                        true,
                        0,
                        List.of(
                                new DeviceRegion(WINDOW.base() + 4096, 2),
                                new DeviceRegion(WINDOW.base() + 100, 0),
                                new DeviceRegion(WINDOW.base(), 1)),
                        MemorySegment.ofArray(packed),
                        0,
                        3);
                e.memcpyHtoDScatterChunk(
                        3,
                        false,
                        false,
                        0,
                        List.of(new DeviceRegion(WINDOW.base() + 1, 3)),
                        MemorySegment.ofArray(packed),
                        3,
                        3);
                e.memcpyDtoH(4, false, 0, WINDOW.base(), 4, 4096);
                e.memcpyDtoH(5, false, 0, WINDOW.base() + 4096, 2, 4096);
                e.memcpyHtoDScatterChunk(
                        6,
                        false,
                        true,
                        0,
                        List.of(new DeviceRegion(WINDOW.base(), 1)),
                        MemorySegment.ofArray(packed),
                        0,
                        1);
                e.memcpyHtoDChunk(7, false, false, 0, WINDOW.base(), MemorySegment.ofArray(packed), 0, 1);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            assertEquals("#3 ok 0 bytes", client.read(), "one answer after the last chunk");
            assertEquals(
                    "#4 data@0 4 bytes [03040506]",
                    client.read(),
                    "the first chunk's last piece, then the second chunk");
            assertEquals("#5 data@0 2 bytes [0102]", client.read());
            String reply = client.read();
            assertTrue(reply.startsWith("#0 error VGPU_PROTOCOL_ERROR: MEMCPY_HTOD#7"), reply);
        }
        worker.awaitReport();
    }

    @Test
    void aRequestInsideAChunkedCopyBreaksTheProtocolAndEndsTheSession() throws Exception {
        startWorker(Duration.ofSeconds(10));
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> {
                e.memAllocAt(2, WINDOW.base(), 8192);
                e.memcpyHtoDChunk(3, false, true, 0, WINDOW.base(), MemorySegment.ofArray(new byte[4096]), 0, 4096);
                e.ctxSynchronize(4);
            });
            assertEquals("#2 ok 0 bytes", client.read());
            String reply = client.read();
            assertTrue(reply.startsWith("#0 error VGPU_PROTOCOL_ERROR: CTX_SYNCHRONIZE#4"), reply);
            assertEquals("closed", client.read());
        }
        WorkerReport report = worker.awaitReport();
        assertFalse(report.clean());
        assertTrue(report.endReason().startsWith("protocol error"), report.endReason());
        assertEquals(MEMORY, freeDeviceMemory());
    }

    @Test
    void aSilentClientIsDroppedAfterTheIdleTimeout() throws Exception {
        startWorker(Duration.ofMillis(400));
        long start = System.nanoTime();
        try (RawClient client = connect()) {
            client.hello(1, TOKEN, WINDOW).read();
            client.send(e -> e.memAllocAt(2, WINDOW.base(), 1 << 20)).read();
            assertEquals("closed", client.read());
        }
        WorkerReport report = worker.awaitReport();
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(400));
        assertEquals("no frame from the client for 400 ms", report.endReason());
        assertEquals(MEMORY, freeDeviceMemory());
    }

    @Test
    void aClientThatVanishesEndsTheSessionAndFreesTheVgpu() throws Exception {
        startWorker(Duration.ofSeconds(30));
        RawClient client = connect();
        client.hello(1, TOKEN, WINDOW).read();
        assertEquals(
                "#2 ok 0 bytes",
                client.send(e -> e.memAllocAt(2, WINDOW.base(), 64 << 20)).read());
        assertTrue(freeDeviceMemory() < MEMORY);
        client.close();
        WorkerReport report = worker.awaitReport();
        assertFalse(report.clean());
        assertEquals("the client closed the connection", report.endReason());
        assertEquals(MEMORY, freeDeviceMemory());
    }

    @Test
    void aPortInUseIsAClearError() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            NetworkException e = assertThrows(
                    NetworkException.class,
                    () -> GpuWorker.start(
                            new WorkerConfig("127.0.0.1", taken.getLocalPort(), 0, "late", Duration.ofSeconds(1)),
                            backend,
                            (token, window) -> {},
                            null,
                            log::add));
            assertEquals(NetworkException.Code.CANNOT_LISTEN, e.code());
            assertTrue(
                    e.getMessage().endsWith(": the address is in use or not one of this machine's")
                            || e.getMessage().endsWith(": the address is in use"),
                    e.getMessage());
            assertTrue(
                    e.getMessage().contains("worker late cannot listen on 127.0.0.1:" + taken.getLocalPort()),
                    e.getMessage());
        }
    }

    @Test
    void aWorkerNobodyConnectsToGivesUp() throws Exception {
        startWorker(Duration.ofMillis(200));
        WorkerReport report = worker.awaitReport();
        assertEquals("no client opened a session within 200 ms", report.endReason());
        assertEquals(0, report.calls());
    }

    @Test
    void aHolderWorkerServesSessionsOneAfterAnotherUntilItIsClosed() throws Exception {
        startWorker(Duration.ofSeconds(1), GpuWorker.Sessions.ONE_AFTER_ANOTHER);
        Thread.sleep(1500);
        assertFalse(worker.report().isDone(), "a holder's worker does not give up for want of a client");

        try (RawClient step = connect()) {
            assertEquals("#1 welcome test-worker", step.hello(1, TOKEN, WINDOW).read());
            assertEquals(
                    "#2 ok 0 bytes",
                    step.send(e -> e.memAllocAt(2, WINDOW.base(), 64 << 20)).read());
            assertEquals("#3 ok 0 bytes", step.send(e -> e.goodbye(3)).read());
            assertEquals("closed", step.read());
        }
        awaitLog("session 1 ended");

        RawClient app = connect();
        assertEquals("#1 welcome test-worker", app.hello(1, TOKEN, WINDOW).read(), "the next step opens it again");
        assertEquals(
                "#2 ok 0 bytes",
                app.send(e -> e.memAllocAt(2, WINDOW.base(), 64 << 20)).read(),
                "the first session's memory was freed");
        app.close(); // as an app does whose vGPU moved home: it closes without a goodbye
        awaitLog("session 2 ended: the client closed the connection; waiting for the job's next session");
        assertEquals(MEMORY, freeDeviceMemory());

        try (RawClient silent = connect()) {
            assertEquals(
                    "#1 welcome test-worker", silent.hello(1, TOKEN, WINDOW).read());
            assertEquals("closed", silent.read(), "the idle timeout bounds a session's silence");
        }
        awaitLog("session 3 ended: no frame from the client for 1000 ms");
        assertFalse(worker.report().isDone());

        worker.close();
        WorkerReport report = worker.awaitReport();
        assertTrue(report.clean(), report.toString());
        assertEquals("the worker was closed after 3 session(s)", report.endReason());
        assertEquals(6, report.calls(), "HELLO, alloc and goodbye; HELLO and alloc; HELLO");
        assertEquals(MEMORY, freeDeviceMemory());
    }

    @Test
    void aLeavingHolderWorkerAnnouncesItselfAndServesUntilItsSessionMovesAway() throws Exception {
        startWorker(Duration.ofSeconds(10), GpuWorker.Sessions.ONE_AFTER_ANOTHER);
        List<String> requests = new CopyOnWriteArrayList<>();
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("holder-leaving");
                LineServer tracker = HolderAnnouncementTest.fakeTracker(
                        requests, "ok migration 3 started: vGPU 1 of job 42 moves home to n1");
                RawClient app = connect()) {
            assertEquals("#1 welcome test-worker", app.hello(1, TOKEN, WINDOW).read());
            Thread leaving = Thread.ofPlatform()
                    .start(new HolderLeaving(
                            HolderAnnouncement.parse(tracker.endpoint().toString(), "42:1"),
                            worker,
                            "test-worker",
                            SiteKey.load(key.keyFile()),
                            Duration.ofSeconds(20),
                            log::add));
            awaitLog("the tracker evacuates the vGPU (ok migration 3 started");
            String[] words = requests.getFirst().split(" ");
            assertEquals(
                    List.of("worker-leaving", "42", "1", "test-worker"),
                    List.of(words).subList(0, 4));
            assertEquals(
                    "42",
                    new TokenVerifier(SiteKey.load(key.keyFile()), "test-worker", Clock.systemUTC())
                            .verify(words[4], 1)
                            .jobId(),
                    "the proof is the site key's for exactly this lend");

            // the evacuation reads the vGPU through this session: the worker still serves it
            assertEquals(
                    "#2 ok 0 bytes",
                    app.send(e -> e.memAllocAt(2, WINDOW.base(), 64 << 20)).read());
            leaving.join(300);
            assertTrue(leaving.isAlive(), "the worker waits for its session to move away");

            assertEquals("#3 ok 0 bytes", app.send(e -> e.goodbye(3)).read());
            leaving.join(10_000);
            assertFalse(leaving.isAlive(), "the session moved away: the worker may end");
            awaitLog("the session ended: the vGPU moved away");
        }
    }

    @Test
    void aSessionsEndIsAwaitedForTheWholeBoundAlsoBelowAMillisecond() throws Exception {
        startWorker(Duration.ofSeconds(10), GpuWorker.Sessions.ONE_AFTER_ANOTHER);
        try (RawClient app = connect()) {
            assertEquals("#1 welcome test-worker", app.hello(1, TOKEN, WINDOW).read());
            // HolderLeaving hands over what is left of its bound, rarely a whole number of milliseconds
            Duration bound = Duration.ofNanos(900_000);
            long start = System.nanoTime();
            assertFalse(worker.awaitSessionEnd(bound), "the session runs on");
            assertTrue(System.nanoTime() - start >= bound.toNanos(), "the wait was cut short of its bound");
        }
    }

    @Test
    void aLeavingHolderWorkerWhoseVgpuNothingMovesEndsAtOnceAndOneWhoseSessionStaysEndsAtTheBound() throws Exception {
        startWorker(Duration.ofSeconds(10), GpuWorker.Sessions.ONE_AFTER_ANOTHER);
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("holder-leaving");
                LineServer refusing = HolderAnnouncementTest.fakeTracker(
                        new CopyOnWriteArrayList<>(), "error node n1 has no free GPU");
                LineServer moving =
                        HolderAnnouncementTest.fakeTracker(new CopyOnWriteArrayList<>(), "ok migration 4 started");
                RawClient app = connect()) {
            assertEquals("#1 welcome test-worker", app.hello(1, TOKEN, WINDOW).read());
            long start = System.nanoTime();
            new HolderLeaving(
                            HolderAnnouncement.parse(refusing.endpoint().toString(), "42:1"),
                            worker,
                            "test-worker",
                            SiteKey.load(key.keyFile()),
                            Duration.ofSeconds(20),
                            log::add)
                    .run();
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10), "no waiting for nothing");
            awaitLog("nothing moves the vGPU: error node n1 has no free GPU");

            start = System.nanoTime();
            new HolderLeaving(
                            HolderAnnouncement.parse(moving.endpoint().toString(), "42:1"),
                            worker,
                            "test-worker",
                            SiteKey.load(key.keyFile()),
                            Duration.ofMillis(500),
                            log::add)
                    .run();
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(500), "it waited for the bound");
            awaitLog("the session still runs after 500 ms: ending with it");
            assertEquals(
                    "#2 ok 0 bytes",
                    app.send(e -> e.memAllocAt(2, WINDOW.base(), 64 << 20)).read());
        }
    }
}
