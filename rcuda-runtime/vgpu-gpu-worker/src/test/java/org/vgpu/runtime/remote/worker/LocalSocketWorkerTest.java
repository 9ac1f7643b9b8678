package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.transport.HostRegionFile;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.workloads.VectorAddWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * A worker on a Unix domain socket, as a launcher's local worker runs: the Java client reaches it over the socket with
 * the same protocol, several vGPUs' sessions run at once, one per vGPU, with no token but the peer's own user.
 */
@Timeout(120)
class LocalSocketWorkerTest {
    private static final long MEMORY = 1L << 30;

    @TempDir
    Path directory;

    /** A kernel that runs until the test lets it end, so that a session's end can be held back. */
    private static final String HOLDING_PTX = """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry holdsTheGpu()
            {
                ret;
            }
            """;

    private final CountDownLatch holding = new CountDownLatch(1);
    private final CountDownLatch letGo = new CountDownLatch(1);
    private final EmulatedBackend backend =
            new EmulatedBackend(1, MEMORY, TestKernels.twins().register("holdsTheGpu", (grid, block, args, memory) -> {
                holding.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
    private final List<String> log = new CopyOnWriteArrayList<>();
    private EventLoopGroup group;
    private GpuWorker worker;
    private Path socket;

    @BeforeEach
    void start() throws IOException {
        group = NettyTransport.newEventLoopGroup(1, "test-client", 0);
        socket = directory.resolve("gpu.sock");
        worker = GpuWorker.startOnSocket(
                socket,
                new WorkerConfig("localhost", 0, 0, "local-test", Duration.ofMinutes(1)),
                backend,
                SameUserSessions.ownerOf(directory),
                log::add,
                SharedHostRegions.in(directory, 1 << 20, backend));
    }

    @AfterEach
    void stop() {
        letGo.countDown();
        worker.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private RemoteGpu connect(int vgpu) {
        return RemoteGpu.connect(
                group,
                WorkerEndpoint.onSocket("local-test", socket, "", () -> {}),
                VaWindow.forVgpu(vgpu),
                RemoteConfig.defaults(),
                null);
    }

    @Test
    void twoVgpusAreServedAtOnceOverTheSocketWithoutAToken() {
        assertTrue(Files.exists(socket), "the worker listens on " + socket);
        try (RemoteGpu first = connect(0);
                RemoteGpu second = connect(1)) {
            WorkloadResult onFirst = new VectorAddWorkload().run(first, 1, 5);
            WorkloadResult onSecond = new VectorAddWorkload().run(second, 1, 6);
            assertTrue(onFirst.passed(), onFirst.errorSummary());
            assertTrue(onSecond.passed(), onSecond.errorSummary());
            assertTrue(first.workerDescription().endsWith("at unix:" + socket), first.workerDescription());
        }
        assertEquals(MEMORY, backend.open(0, VaWindow.forVgpu(9)).memGetInfo().free(), "both sessions freed theirs");
    }

    @Test
    void aProcessOfAnotherUserIsRefusedByItsPeerCredentials() throws IOException {
        int uid = (Integer) Files.getAttribute(directory, "unix:uid");
        Path strangers = Files.createDirectory(directory.resolve("strangers"));
        try (GpuWorker othersWorker = GpuWorker.startOnSocket(
                strangers.resolve("gpu.sock"),
                new WorkerConfig("localhost", 0, 0, "someone-elses", Duration.ofMinutes(1)),
                backend,
                new SameUserSessions(uid + 1, Files.getOwner(directory)),
                log::add)) {
            VgpuException refused = assertThrows(
                    VgpuException.class,
                    () -> RemoteGpu.connect(
                            group,
                            WorkerEndpoint.onSocket("someone-elses", strangers.resolve("gpu.sock"), "", () -> {}),
                            VaWindow.forVgpu(0),
                            RemoteConfig.defaults(),
                            null));
            assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code(), refused.getMessage());
            assertTrue(
                    refused.getMessage()
                            .contains("a local worker serves only the processes of its own user (uid " + (uid + 1)
                                    + "), and this connection comes from "),
                    refused.getMessage());
            assertFalse(othersWorker.report().isDone(), "the worker goes on waiting for its own user's processes");
        }
    }

    @Test
    void aSecondSessionOfOneVgpuIsRefusedWhileTheFirstRunsAndServedAfterIt() {
        try (RemoteGpu first = connect(0)) {
            VgpuException refused = assertThrows(VgpuException.class, () -> connect(0));
            assertEquals(ErrorCode.CUDA_ERROR_NOT_PERMITTED, refused.code(), refused.getMessage());
            assertTrue(
                    refused.getMessage()
                            .contains("worker local-test already serves a session of vGPU 0: one process at a time"
                                    + " uses a vGPU"),
                    refused.getMessage());
            assertTrue(new VectorAddWorkload().run(first, 1, 1).passed(), "the first session goes on");
        }
        try (RemoteGpu next = connect(0)) {
            assertTrue(new VectorAddWorkload().run(next, 1, 2).passed());
        }
    }

    /**
     * A process whose last kernel still runs when it says goodbye and exits: its session ends (and frees its vGPU)
     * once that kernel is done, on the worker's GPU thread.
     */
    private RawClient leavingWhileItsKernelRuns() throws InterruptedException {
        RawClient leaving = RawClient.onSocket(socket);
        assertTrue(leaving.hello(1, "", VaWindow.forVgpu(0)).read().startsWith("#1 welcome local-test"));
        assertEquals(
                "#2 ok 0 bytes",
                leaving.send(e -> e.moduleLoad(2, 1, HOLDING_PTX.getBytes(StandardCharsets.US_ASCII)))
                        .read());
        assertTrue(leaving.send(e -> e.moduleGetFunction(3, 1, 1, "holdsTheGpu"))
                .read()
                .startsWith("#3 ok"));
        leaving.send(e -> e.launchKernel(4, true, 1, Dim3.of(1), Dim3.of(1), 0, 0, KernelArgs.none()));
        assertTrue(holding.await(30, TimeUnit.SECONDS), "the kernel runs");
        leaving.send(e -> e.goodbye(5));
        return leaving;
    }

    @Test
    void aProcessStartedAsTheLastOneLeavesWaitsForItsSessionToEndAndIsServed() throws Exception {
        try (RawClient leaving = leavingWhileItsKernelRuns()) {
            CompletableFuture<RemoteGpu> next = CompletableFuture.supplyAsync(() -> connect(0));
            while (!next.isDone() && log.stream().noneMatch(line -> line.contains("waits for the one before it"))) {
                Thread.sleep(10);
            }
            assertFalse(next.isDone(), "the next process waits: " + log);
            letGo.countDown();
            assertEquals("#5 ok 0 bytes", leaving.read(), "the last process's goodbye, answered once its kernel ended");
            try (RemoteGpu served = next.get(30, TimeUnit.SECONDS)) {
                assertTrue(new VectorAddWorkload().run(served, 1, 3).passed(), "the next process is served");
            }
        }
    }

    @Test
    void aProcessIsRefusedWhenTheSessionBeforeItDoesNotEndInTime() throws Exception {
        try (RawClient leaving = leavingWhileItsKernelRuns()) {
            VgpuException refused = assertThrows(VgpuException.class, () -> connect(0));
            assertEquals(ErrorCode.CUDA_ERROR_NOT_PERMITTED, refused.code(), refused.getMessage());
            assertTrue(
                    refused.getMessage()
                            .contains("the session before this one on its vGPU was still ending 5 s after its client"
                                    + " left; try again shortly"),
                    refused.getMessage());
            letGo.countDown();
            assertEquals("#5 ok 0 bytes", leaving.read());
        }
        try (RemoteGpu next = connect(0)) {
            assertTrue(new VectorAddWorkload().run(next, 1, 4).passed(), "served once the one before had ended");
        }
    }

    /** The id, file and nonce of the region an OK to HOST_REGION_CREATE names, its file mapped as the program maps it. */
    private record Mapped(int id, MemorySegment bytes) {}

    private static Mapped mapRegion(RawClient client, Arena arena) throws IOException {
        ByteBuf result = client.lastResult();
        int id = result.readInt();
        Path file = Path.of(result.readCharSequence(result.readInt(), StandardCharsets.UTF_8)
                .toString());
        long nonce = result.readLong();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena);
            assertEquals(nonce, mapping.get(ValueLayout.JAVA_LONG_UNALIGNED, HostRegionFile.NONCE_OFFSET));
            Files.delete(file); // as the program does once it mapped it
            return new Mapped(id, mapping.asSlice(HostRegionFile.HEADER_BYTES));
        }
    }

    @Test
    void copiesWithASharedHostRegionCarryNoBytesAndABadRegionIsAnErrorTheSessionOutlives() throws IOException {
        long base = VaWindow.forVgpu(0).base();
        try (RawClient client = RawClient.onSocket(socket);
                Arena arena = Arena.ofShared()) {
            client.hello(1, "", VaWindow.forVgpu(0));
            assertTrue(client.read().startsWith("#1 welcome local-test"));
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, base, 2 << 20)).read());
            assertTrue(client.send(e -> e.hostRegionCreate(3, 8192)).read().startsWith("#3 ok"));
            Mapped region = mapRegion(client, arena);
            region.bytes().asSlice(4096, 4).copyFrom(MemorySegment.ofArray(new byte[] {1, 2, 3, 4}));

            int in = client.send(e -> e.memcpyHtoDFromRegion(4, false, 0, base + 8, region.id(), 4096, 4))
                    .read()
                    .length();
            assertEquals("#4 ok 0 bytes".length(), in);
            assertEquals(
                    "#5 data@0 4 bytes [01020304]",
                    client.send(e -> e.memcpyDtoH(5, false, 0, base + 8, 4, 4096))
                            .read());
            assertEquals(
                    "#6 ok 0 bytes",
                    client.send(e -> e.memcpyDtoHToRegion(6, false, 0, base + 6, region.id(), 100, 4))
                            .read());
            assertEquals(1, region.bytes().get(ValueLayout.JAVA_BYTE, 102), "the device's bytes, in the region");
            assertEquals(2, region.bytes().get(ValueLayout.JAVA_BYTE, 103));

            String outside = client.send(e -> e.memcpyHtoDFromRegion(7, false, 0, base, region.id(), 8190, 4))
                    .read();
            assertTrue(
                    outside.startsWith("#7 error") && outside.contains("outside shared host region " + region.id()),
                    outside);
            String unknown = client.send(e -> e.memcpyDtoHToRegion(8, false, 0, base, region.id() + 9, 0, 4))
                    .read();
            assertTrue(unknown.contains("no shared host region " + (region.id() + 9)), unknown);
            String notOnDevice = client.send(
                            e -> e.memcpyHtoDFromRegion(9, false, 0, base + (4L << 20), region.id(), 0, 4))
                    .read();
            assertTrue(notOnDevice.startsWith("#9 error"), notOnDevice);
            assertEquals(
                    "#10 ok 0 bytes",
                    client.send(e -> e.hostRegionFree(10, region.id())).read());
            assertTrue(
                    client.send(e -> e.hostRegionFree(11, region.id())).read().startsWith("#11 error"));
            String freed = client.send(e -> e.memcpyHtoDFromRegion(12, false, 0, base, region.id(), 0, 4))
                    .read();
            assertTrue(freed.contains("no shared host region " + region.id()), freed);
            assertEquals(
                    "#13 data@0 4 bytes [01020304]",
                    client.send(e -> e.memcpyDtoH(13, false, 0, base + 8, 4, 4096))
                            .read(),
                    "the session goes on");
        }
    }

    @Test
    void asynchronousCopiesWithASharedHostRegionAreNotAnsweredAndTheirFailureComesAtTheNextSynchronizingRequest()
            throws IOException {
        long base = VaWindow.forVgpu(0).base();
        try (RawClient client = RawClient.onSocket(socket);
                Arena arena = Arena.ofShared()) {
            client.hello(1, "", VaWindow.forVgpu(0));
            assertTrue(client.read().startsWith("#1 welcome"));
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, base, 2 << 20)).read());
            assertTrue(client.send(e -> e.hostRegionCreate(3, 8192)).read().startsWith("#3 ok"));
            Mapped region = mapRegion(client, arena);
            region.bytes().asSlice(0, 4).copyFrom(MemorySegment.ofArray(new byte[] {9, 8, 7, 6}));

            client.send(e -> e.memcpyHtoDFromRegion(4, true, 0, base, region.id(), 0, 4));
            client.send(e -> e.memcpyDtoHToRegion(5, true, 0, base, region.id(), 200, 4));
            assertEquals(
                    "#6 ok 0 bytes",
                    client.send(e -> e.ctxSynchronize(6)).read(),
                    "the first answer is the synchronize's: the asynchronous copies got none");
            assertEquals(9, region.bytes().get(ValueLayout.JAVA_BYTE, 200), "there when the synchronize was answered");
            assertEquals(6, region.bytes().get(ValueLayout.JAVA_BYTE, 203));

            client.send(e -> e.memcpyHtoDFromRegion(7, true, 0, base, region.id(), 8190, 4));
            String kept = client.send(e -> e.ctxSynchronize(8)).read();
            assertTrue(kept.startsWith("#8 error") && kept.contains("outside shared host region " + region.id()), kept);
        }
    }

    @Test
    void aRegionPastTheBoundIsOutOfMemoryAndASessionsEndFreesItsRegions() {
        try (RawClient client = RawClient.onSocket(socket)) {
            client.hello(1, "", VaWindow.forVgpu(0));
            assertTrue(client.read().startsWith("#1 welcome"));
            assertTrue(client.send(e -> e.hostRegionCreate(2, 1 << 20)).read().startsWith("#2 ok"));
            String refused = client.send(e -> e.hostRegionCreate(3, 1)).read();
            assertTrue(refused.startsWith("#3 error") && refused.contains("bound of 1048576 bytes"), refused);
        }
        try (RawClient next = RawClient.onSocket(socket)) {
            next.hello(1, "", VaWindow.forVgpu(1));
            assertTrue(next.read().startsWith("#1 welcome"));
            // the first session's end is seen on the worker's own time: its region is freed then
            String answer = "";
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            for (int id = 2; !answer.startsWith("#" + (id - 1) + " ok") && System.nanoTime() < deadline; id++) {
                int requestId = id;
                answer = next.send(e -> e.hostRegionCreate(requestId, 1 << 20)).read();
            }
            assertTrue(answer.contains(" ok "), "the ended session's region was freed: " + answer);
        }
    }

    @Test
    void aWorkerOverTcpSharesHostMemoryOnlyWithAClientThatOfferedSharedMemory() {
        try (GpuWorker overTcp = GpuWorker.start(
                        new WorkerConfig("127.0.0.1", 0, 0, "tcp-test", Duration.ofMinutes(1)),
                        backend,
                        (token, window) -> {},
                        null,
                        log::add);
                RawClient client = new RawClient("127.0.0.1", overTcp.address().getPort())) {
            client.hello(1, "", VaWindow.forVgpu(0));
            assertTrue(client.read().startsWith("#1 welcome"));
            String refused = client.send(e -> e.hostRegionCreate(2, 4096)).read();
            assertTrue(
                    refused.startsWith("#2 error") && refused.contains("did not offer shared memory over TCP"),
                    refused);
            assertTrue(overTcp.sharedHostBytes() > 0, "it shares some with a client on its host");
            assertEquals(0, overTcp.sharedHostBytesHeld());
        }
    }
}
