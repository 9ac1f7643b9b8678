package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.NettyLeaks;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.protocol.SharedRegionOffer;
import org.vgpu.runtime.remote.protocol.Welcome;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.transport.SameHostBulk;
import org.vgpu.runtime.remote.transport.StripedBulk;

/**
 * The client against a worker that misbehaves: garbage, replies to requests nobody made, more data
 * than a copy asked for, a session error, silence. Each is one clear error that names the worker,
 * the connection is dropped, no memory outside the caller's copy is written, and no buffer leaks.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(NettyLeaks.class)
class ClientProtocolTest {
    private static final VaWindow WINDOW = VaWindow.forVgpu(0);

    private EventLoopGroup group;
    private FakeWorker worker;

    @BeforeEach
    void start() throws Exception {
        group = NettyTransport.newEventLoopGroup(1, "client-test", 0);
        worker = new FakeWorker();
    }

    @AfterEach
    void stop() throws Exception {
        worker.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private CompletableFuture<RemoteGpu> connectAsync(RemoteConfig config) {
        return CompletableFuture.supplyAsync(() -> RemoteGpu.connect(group, worker.endpoint(), WINDOW, config, null));
    }

    private RemoteGpu connect() throws Exception {
        CompletableFuture<RemoteGpu> connecting = connectAsync(RemoteConfig.defaults());
        worker.welcome(30_000);
        return connecting.get(10, TimeUnit.SECONDS);
    }

    private static VgpuException failure(CompletableFuture<?> call) {
        Throwable cause = assertThrows(Exception.class, () -> call.get(10, TimeUnit.SECONDS))
                .getCause();
        return assertThrowsVgpu(cause);
    }

    private static VgpuException assertThrowsVgpu(Throwable cause) {
        assertTrue(cause instanceof VgpuException, String.valueOf(cause));
        return (VgpuException) cause;
    }

    @Test
    void aWorkerThatPredatesStripesIsGreetedAgainWithoutThemAndTheBytesStayInBand() throws Exception {
        System.setProperty(SameHostBulk.PROPERTY, "off");
        System.setProperty(StripedBulk.MODE_PROPERTY, "always");
        System.setProperty(StripedBulk.PROPERTY, "4");
        try {
            CompletableFuture<RemoteGpu> connecting = connectAsync(RemoteConfig.defaults());
            int first = worker.expect("HELLO");
            assertEquals(2, worker.lastHello().protocolVersion());
            assertEquals(4, worker.lastHello().stripes(), "the HELLO offers the stripes asked for");
            // what a worker of version 2 without stripes answers: the offer's bit is unknown to it
            worker.reply(encoder -> encoder.error(first, Frames.violation("HELLO offers unknown bulk paths 0x02")));
            worker.dropConnection();
            worker.welcome(30_000);
            assertEquals(1, worker.lastHello().protocolVersion());
            assertEquals(0, worker.lastHello().stripes());
            RemoteGpu gpu = connecting.get(10, TimeUnit.SECONDS);
            assertEquals(
                    "in-band (frames on the connection): it refused a HELLO of protocol version 2 offering stripes,"
                            + " as workers before that version do, and was greeted again in version 1",
                    gpu.bulkPathDescription());
            long address = allocate(gpu, 64);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment host = arena.allocate(4);
                CompletableFuture<Void> copy = CompletableFuture.runAsync(() -> gpu.memcpyDtoH(host, address, 4));
                worker.data(worker.expect("MEMCPY_DTOH"), false, 0, new byte[] {1, 2, 3, 4});
                copy.get(10, TimeUnit.SECONDS);
                assertArrayEquals(new byte[] {1, 2, 3, 4}, host.toArray(ValueLayout.JAVA_BYTE));
            }
        } finally {
            System.clearProperty(SameHostBulk.PROPERTY);
            System.clearProperty(StripedBulk.MODE_PROPERTY);
            System.clearProperty(StripedBulk.PROPERTY);
        }
    }

    /**
     * A worker reads each connection when its one event loop gets to it, so a stripe's HELLO may come after its
     * session already ended, the key forgotten: the worker refuses the stripe with an ERROR on it. That refusal is
     * the worker's answer, not a chunk header (read as one it was "stripe 1 carries chunk 91 where chunk 1 is next on
     * it"), and a session that says goodbye does not wait for its stripes: its close stays clean.
     */
    @Test
    void aStripeRefusedAfterItsSessionSaidGoodbyeLeavesTheCloseClean() throws Exception {
        System.setProperty(SameHostBulk.PROPERTY, "off");
        System.setProperty(StripedBulk.MODE_PROPERTY, "always");
        System.setProperty(StripedBulk.PROPERTY, "2");
        try {
            CompletableFuture<RemoteGpu> connecting = connectAsync(RemoteConfig.defaults());
            worker.welcomeWithStripes(30_000, 2, "k".repeat(64));
            try (FakeWorker.Stripe first = worker.acceptStripe();
                    FakeWorker.Stripe second = worker.acceptStripe()) {
                RemoteGpu gpu = connecting.get(10, TimeUnit.SECONDS);
                assertEquals("striped over 2 TCP connections (one event loop each)", gpu.bulkPathDescription());
                FakeWorker.Stripe late = first.hello().stripeIndex() == 1 ? first : second;
                CompletableFuture<Void> closing = CompletableFuture.runAsync(gpu::close);
                int id = worker.expect("GOODBYE");
                late.reply(encoder -> encoder.error(
                        0, ErrorCode.VGPU_AUTH_FAILED, "worker w12 has no session with the stripe key presented"));
                // the client has read the refusal once it closed the stripe, and only then hears the goodbye's answer
                late.awaitClosedByClient();
                worker.reply(encoder -> encoder.ok(id));
                closing.get(10, TimeUnit.SECONDS);
            }
        } finally {
            System.clearProperty(SameHostBulk.PROPERTY);
            System.clearProperty(StripedBulk.MODE_PROPERTY);
            System.clearProperty(StripedBulk.PROPERTY);
        }
    }

    @Test
    void aWorkerOlderThanProtocolVersionTwoIsGreetedAgainInVersionOneAndTheBytesStayInBand() throws Exception {
        CompletableFuture<RemoteGpu> connecting = connectAsync(RemoteConfig.defaults());
        int first = worker.expect("HELLO");
        assertEquals(2, worker.lastHello().protocolVersion());
        assertTrue(worker.lastHello().offersSharedMemory(), "a worker on this host is offered shared memory");
        // what a worker of version 1 answers: its decoder finds the offer's byte too many
        worker.reply(encoder -> encoder.error(first, Frames.violation("HELLO body has 1 bytes too many")));
        worker.dropConnection();
        worker.welcome(30_000);
        assertEquals(1, worker.lastHello().protocolVersion());
        assertFalse(worker.lastHello().offersSharedMemory());
        RemoteGpu gpu = connecting.get(10, TimeUnit.SECONDS);
        assertEquals(
                "in-band (frames on the connection): it refused a HELLO of protocol version 2, as workers before that"
                        + " version do, and was greeted again in version 1",
                gpu.bulkPathDescription());
        long address = allocate(gpu, 64);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment host = arena.allocate(4);
            CompletableFuture<Void> copy = CompletableFuture.runAsync(() -> gpu.memcpyDtoH(host, address, 4));
            worker.data(worker.expect("MEMCPY_DTOH"), false, 0, new byte[] {9, 8, 7, 6});
            copy.get(10, TimeUnit.SECONDS);
            assertArrayEquals(new byte[] {9, 8, 7, 6}, host.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aRegionTheClientCannotMapLeavesTheBytesInBandWithTheReason() throws Exception {
        CompletableFuture<RemoteGpu> connecting = connectAsync(RemoteConfig.defaults());
        int id = worker.expect("HELLO");
        worker.reply(encoder -> encoder.welcome(
                id,
                new Welcome(
                        2,
                        "fake",
                        30_000,
                        FakeWorker.DEVICE,
                        new SharedRegionOffer("/nonexistent/vgpu-bulk-00", 7, ""))));
        RemoteGpu gpu = connecting.get(10, TimeUnit.SECONDS);
        assertTrue(
                gpu.bulkPathDescription()
                        .startsWith("in-band (frames on the connection): the shared region it offered,"
                                + " /nonexistent/vgpu-bulk-00, cannot be mapped here: "),
                gpu.bulkPathDescription());
    }

    @Test
    void aDataChunkNamingASharedSlotOfASessionWithoutOneBreaksTheProtocol() throws Exception {
        RemoteGpu gpu = connect();
        long address = allocate(gpu, 64);
        try (Arena arena = Arena.ofShared()) {
            CompletableFuture<Void> copy =
                    CompletableFuture.runAsync(() -> gpu.memcpyDtoH(arena.allocate(8), address, 8));
            int id = worker.expect("MEMCPY_DTOH");
            ByteBuf frame = Unpooled.buffer();
            new ReplyEncoder().wrap(frame).dataHeader(id, false, false, Frames.FLAG_IN_SLOT, 0, 8);
            frame.writeInt(0).writeInt(8);
            worker.send(ByteBufUtil.getBytes(frame));
            frame.release();
            VgpuException e = failure(copy);
            assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code(), e.getMessage());
            assertTrue(
                    e.getMessage().contains("DATA names a shared slot but the session's bulk bytes go in-band"),
                    e.getMessage());
        }
    }

    @Test
    void garbageInsteadOfWelcomeFailsTheConnect() {
        CompletableFuture<RemoteGpu> connecting = connectAsync(RemoteConfig.defaults());
        assertTrue(worker.nextRequest().startsWith("HELLO#"));
        worker.send("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        VgpuException e = failure(connecting);
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("worker fake at 127.0.0.1:"), e.getMessage());
        assertEquals("closed", worker.nextRequest());
    }

    @Test
    void aWorkerThatNeverAnswersHelloIsGivenUp() {
        CompletableFuture<RemoteGpu> connecting =
                connectAsync(RemoteConfig.defaults().withConnectTimeout(Duration.ofMillis(500)));
        assertTrue(worker.nextRequest().startsWith("HELLO#"));
        VgpuException e = failure(connecting);
        assertEquals(ErrorCode.VGPU_WORKER_LOST, e.code());
        assertTrue(e.getMessage().contains("did not answer HELLO within 500 ms"), e.getMessage());
    }

    @Test
    void aWorkerNobodyListensForIsLostWithTheReasonInVgpusWords() {
        // a GPU call's failure (opening a vGPU) keeps its VGPU_ code; the reason is vgpu's, not the JDK's or Netty's
        WorkerEndpoint nobody = new WorkerEndpoint("gone", "127.0.0.1", 1, "t", () -> {});
        VgpuException e = assertThrows(
                VgpuException.class, () -> RemoteGpu.connect(group, nobody, WINDOW, RemoteConfig.defaults(), null));
        assertEquals(ErrorCode.VGPU_WORKER_LOST, e.code());
        assertTrue(
                e.getMessage().endsWith("cannot connect to worker gone at 127.0.0.1:1: connection refused"),
                e.getMessage());
    }

    @Test
    void aReplyToARequestNobodyMadeBreaksTheSession() throws Exception {
        RemoteGpu gpu = connect();
        CompletableFuture<Object> info = CompletableFuture.supplyAsync(gpu::memGetInfo);
        worker.expect("MEM_GET_INFO");
        worker.reply(encoder -> encoder.ok(999));
        VgpuException e = failure(info);
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code());
        assertTrue(e.getMessage().contains("OK for request 999, which no call waits for"), e.getMessage());
        assertEquals(
                ErrorCode.VGPU_PROTOCOL_ERROR,
                assertThrows(VgpuException.class, gpu::ctxSynchronize).code(),
                "the session is over");
        assertEquals("closed", worker.nextRequest());
        gpu.close();
    }

    @Test
    void moreDataThanTheCopyAskedForIsRefusedBeforeItIsWritten() throws Exception {
        RemoteGpu gpu = connect();
        long address = allocate(gpu, 64);

        byte[] destination = new byte[64];
        Arrays.fill(destination, (byte) 0x55);
        CompletableFuture<Void> copy = CompletableFuture.runAsync(
                () -> gpu.memcpyDtoH(MemorySegment.ofArray(destination).asSlice(0, 16), address, 16));
        worker.data(worker.expect("MEMCPY_DTOH"), false, 0, new byte[32]);
        VgpuException e = failure(copy);
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code());
        assertTrue(e.getMessage().contains("does not continue a copy of 16 bytes"), e.getMessage());
        byte[] untouched = new byte[64];
        Arrays.fill(untouched, (byte) 0x55);
        assertArrayEquals(untouched, destination);
        gpu.close();
    }

    /** Allocates {@code bytes} on the fake worker, answering the request as a worker would. */
    private long allocate(RemoteGpu gpu, long bytes) throws Exception {
        CompletableFuture<Long> allocated = CompletableFuture.supplyAsync(() -> gpu.memAlloc(bytes));
        int id = worker.expect("MEM_ALLOC_AT");
        worker.reply(encoder -> encoder.ok(id));
        return allocated.get(10, TimeUnit.SECONDS);
    }

    /** Closes the session, answering its GOODBYE as a worker does. */
    private void goodbye(RemoteGpu gpu) throws Exception {
        CompletableFuture<Void> closing = CompletableFuture.runAsync(gpu::close);
        int id = worker.expect("GOODBYE");
        worker.reply(encoder -> encoder.ok(id));
        closing.get(10, TimeUnit.SECONDS);
    }

    /** Queues an asynchronous copy of {@code bytes} into {@code host} on a new stream, returns the stream; the worker sees both requests. */
    private StreamHandle streamEndingInCopyToHost(RemoteGpu gpu, long address, MemorySegment host) {
        StreamHandle stream = gpu.streamCreate();
        gpu.memcpyDtoHAsync(host, address, host.byteSize(), stream);
        return stream;
    }

    @Test
    void aStreamWhoseLastWorkIsACopyToHostIsWaitedForWithoutAskingTheWorker() throws Exception {
        RemoteGpu gpu = connect();
        long address = allocate(gpu, 64);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment host = arena.allocate(4);
            StreamHandle stream = streamEndingInCopyToHost(gpu, address, host);
            CompletableFuture<Void> sync = CompletableFuture.runAsync(() -> gpu.streamSynchronize(stream));
            worker.expect("STREAM_CREATE");
            worker.data(worker.expect("MEMCPY_DTOH"), false, 0, new byte[] {1, 2, 3, 4});
            sync.get(10, TimeUnit.SECONDS);
            assertArrayEquals(new byte[] {1, 2, 3, 4}, host.toArray(ValueLayout.JAVA_BYTE));

            CompletableFuture<Void> next = CompletableFuture.runAsync(gpu::ctxSynchronize);
            int id = worker.expect("CTX_SYNCHRONIZE"); // not STREAM_SYNCHRONIZE: the stream's synchronize sent nothing
            worker.reply(encoder -> encoder.ok(id));
            next.get(10, TimeUnit.SECONDS);
        }
        goodbye(gpu);
    }

    @Test
    void aFailureTheWorkerKeepsIsStillReportedByTheStreamSynchronize() throws Exception {
        RemoteGpu gpu = connect();
        long address = allocate(gpu, 64);
        try (Arena arena = Arena.ofShared()) {
            StreamHandle stream = streamEndingInCopyToHost(gpu, address, arena.allocate(4));
            CompletableFuture<Void> sync = CompletableFuture.runAsync(() -> gpu.streamSynchronize(stream));
            worker.expect("STREAM_CREATE");
            worker.data(worker.expect("MEMCPY_DTOH"), false, true, 0, new byte[4]);
            int id = worker.expect("STREAM_SYNCHRONIZE");
            worker.reply(encoder -> encoder.error(
                    id,
                    new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "asynchronous MEMSET (request 3) failed")));
            VgpuException e = failure(sync);
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code());
            assertTrue(e.getMessage().contains("asynchronous MEMSET"), e.getMessage());
        }
        goodbye(gpu);
    }

    @Test
    void workQueuedAfterTheCopyMakesTheStreamSynchronizeAskTheWorker() throws Exception {
        RemoteGpu gpu = connect();
        long address = allocate(gpu, 64);
        try (Arena arena = Arena.ofShared()) {
            StreamHandle stream = streamEndingInCopyToHost(gpu, address, arena.allocate(4));
            gpu.memsetD8Async(address, (byte) 1, 64, stream);
            CompletableFuture<Void> sync = CompletableFuture.runAsync(() -> gpu.streamSynchronize(stream));
            worker.expect("STREAM_CREATE");
            worker.data(worker.expect("MEMCPY_DTOH"), false, 0, new byte[4]);
            worker.expect("MEMSET");
            int id = worker.expect("STREAM_SYNCHRONIZE"); // the memset may still run
            assertFalse(sync.isDone(), "the synchronize waits for the worker's answer");
            worker.reply(encoder -> encoder.ok(id));
            sync.get(10, TimeUnit.SECONDS);
        }
        goodbye(gpu);
    }

    @Test
    void anAsynchronousCopyToHostOfAChunkOrMoreGoesOutWithoutASynchronizingCall() throws Exception {
        RemoteGpu gpu = connect();
        int chunk = RemoteConfig.defaults().chunkBytes();
        long address = allocate(gpu, chunk);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment small = arena.allocate(4);
            MemorySegment large = arena.allocate(chunk);
            // asynchronous, so batched: nothing reaches the worker yet
            StreamHandle stream = gpu.streamCreate();
            gpu.memcpyDtoHAsync(small, address, small.byteSize(), stream);
            // a chunk's worth: it and everything batched before it go out now, though the app waits for nothing
            gpu.memcpyDtoHAsync(large, address, large.byteSize(), stream);
            worker.expect("STREAM_CREATE");
            int smallId = worker.expect("MEMCPY_DTOH");
            int largeId = worker.expect("MEMCPY_DTOH");

            byte[] bytes = new byte[chunk];
            Arrays.fill(bytes, (byte) 7);
            worker.data(smallId, false, 0, new byte[] {1, 2, 3, 4});
            worker.data(largeId, false, 0, bytes);
            gpu.streamSynchronize(stream);
            assertArrayEquals(new byte[] {1, 2, 3, 4}, small.toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(bytes, large.toArray(ValueLayout.JAVA_BYTE));
        }
        goodbye(gpu);
    }

    @Test
    void aCopyWhoseChunksLandOffTheEventLoopIsWholeWhenItReturns() throws Exception {
        RemoteGpu gpu = connect();
        int chunk = RemoteTuning.current().copierMinBytes();
        long address = allocate(gpu, 3L * chunk);
        byte[][] chunks = new byte[3][chunk];
        for (int i = 0; i < chunks.length; i++) {
            Arrays.fill(chunks[i], (byte) (i + 1));
        }
        try (Arena arena = Arena.ofShared()) {
            MemorySegment host = arena.allocate(3L * chunk);
            // Many times over, so a return before the copier is done would be caught at least once.
            for (int round = 0; round < 20; round++) {
                host.fill((byte) 0);
                CompletableFuture<Void> copy =
                        CompletableFuture.runAsync(() -> gpu.memcpyDtoH(host, address, host.byteSize()));
                int id = worker.expect("MEMCPY_DTOH");
                for (int i = 0; i < chunks.length; i++) {
                    worker.data(id, i + 1 < chunks.length, (long) i * chunk, chunks[i]);
                }
                copy.get(10, TimeUnit.SECONDS);
                for (int i = 0; i < chunks.length; i++) {
                    assertArrayEquals(
                            chunks[i],
                            host.asSlice((long) i * chunk, chunk).toArray(ValueLayout.JAVA_BYTE),
                            "chunk " + i);
                }
            }
        }
        goodbye(gpu);
    }

    @Test
    void aSessionErrorFromTheWorkerFailsWaitingCallsWithItsCode() throws Exception {
        RemoteGpu gpu = connect();
        CompletableFuture<Void> sync = CompletableFuture.runAsync(gpu::ctxSynchronize);
        assertTrue(worker.nextRequest().startsWith("CTX_SYNCHRONIZE#"));
        worker.reply(encoder -> encoder.error(0, ErrorCode.CUDA_ERROR_DEINITIALIZED, "the driver is shutting down"));
        VgpuException e = failure(sync);
        assertEquals(ErrorCode.CUDA_ERROR_DEINITIALIZED, e.code());
        assertTrue(
                e.getMessage().contains("worker fake at 127.0.0.1:")
                        && e.getMessage().contains("ended the session"),
                e.getMessage());
        gpu.close();
    }

    @Test
    void aWorkerThatStopsAnsweringKeepalivesIsLost() throws Exception {
        CompletableFuture<RemoteGpu> connecting = connectAsync(RemoteConfig.defaults());
        worker.welcome(600);
        RemoteGpu gpu = connecting.get(10, TimeUnit.SECONDS);
        CompletableFuture<Void> sync = CompletableFuture.runAsync(gpu::ctxSynchronize);
        assertTrue(worker.nextRequest().startsWith("CTX_SYNCHRONIZE#"));
        assertTrue(worker.nextRequest().startsWith("PING#"), "the client asks whether the worker is still there");
        VgpuException e = failure(sync);
        assertEquals(ErrorCode.VGPU_WORKER_LOST, e.code());
        assertTrue(e.getMessage().contains("keepalive expired"), e.getMessage());
        gpu.close();
    }
}
