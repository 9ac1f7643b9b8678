package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
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
import org.vgpu.runtime.remote.security.TestCertificates;
import org.vgpu.runtime.remote.security.TlsConfig;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.worker.GpuWorker;
import org.vgpu.runtime.remote.worker.WorkerConfig;
import org.vgpu.runtime.workloads.MatMulWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/** A session over TLS: it works with the worker's certificate trusted, and is refused with another one. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RemoteTlsTest {
    @TempDir
    Path directory;

    private EventLoopGroup group;
    private GpuWorker worker;

    @BeforeEach
    void startWorker() throws Exception {
        TestCertificates certificates = TestCertificates.create(directory, "worker");
        worker = GpuWorker.start(
                new WorkerConfig("127.0.0.1", 0, 0, "tls-worker", Duration.ofSeconds(30)),
                new EmulatedBackend(1, 1L << 30, TestKernels.twins()),
                (token, window) -> {},
                new TlsConfig.Server(certificates.certificate(), certificates.privateKey()).newSslContext(),
                line -> {});
        group = NettyTransport.newEventLoopGroup(1, "tls-client", 0);
    }

    @AfterEach
    void stop() {
        worker.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private RemoteGpu connect(Path trusted) {
        return RemoteGpu.connect(
                group,
                new WorkerEndpoint("tls-worker", "127.0.0.1", worker.address().getPort(), "t", () -> {}),
                VaWindow.forVgpu(0),
                RemoteConfig.defaults(),
                new TlsConfig.Client(trusted).newSslContext());
    }

    @Test
    void aSessionRunsOverTls() throws Exception {
        Path trusted = directory.resolve("worker.crt.pem");
        try (RemoteGpu gpu = connect(trusted)) {
            WorkloadResult result = new MatMulWorkload().run(gpu, 1, 3);
            assertTrue(result.passed(), result.errorSummary());
        }
        assertTrue(worker.awaitReport().clean());
    }

    @Test
    void aWorkerWithAnotherCertificateIsRefused() throws Exception {
        TestCertificates stranger = TestCertificates.create(directory, "stranger");
        VgpuException refused = assertThrows(VgpuException.class, () -> connect(stranger.certificate()));
        assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code(), refused.getMessage());
        assertTrue(refused.getMessage().contains("TLS with worker tls-worker"), refused.getMessage());
        assertTrue(
                refused.getMessage().endsWith("the certificate is not signed by a trusted certificate"),
                "in vgpu's words, not the JDK's: " + refused.getMessage());
    }
}
