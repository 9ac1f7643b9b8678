package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
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

    private final EmulatedBackend backend = new EmulatedBackend(1, MEMORY, TestKernels.twins());
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
                log::add);
    }

    @AfterEach
    void stop() {
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
}
