package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.security.CertificatePin;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenIssuer;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.security.SelfSignedIdentity;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.worker.GpuWorker;
import org.vgpu.runtime.remote.worker.WorkerConfig;
import org.vgpu.runtime.workloads.MatMulWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * TLS as a tracker's holder workers use it, over real sockets: the worker's self-signed certificate, pinned by the
 * client's session token. The pinned certificate opens a session; another certificate, a client without a pin at a TLS
 * worker, and a pinning client at a plain worker are each refused with a message that names the worker and the cause.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PinnedTlsTest {
    private static final String WORKER = "n2-holder-43";

    private static SelfSignedIdentity identity;
    private static SelfSignedIdentity stranger;

    private final TokenIssuer issuer = new TokenIssuer(SiteKey.generate(), Clock.systemUTC());
    private EventLoopGroup group;
    private GpuWorker worker;

    @BeforeAll
    static void makeIdentities() {
        identity = SelfSignedIdentity.generate(WORKER);
        stranger = SelfSignedIdentity.generate("stranger");
    }

    @BeforeEach
    void startGroup() {
        group = NettyTransport.newEventLoopGroup(1, "pinned-tls-client", 0);
    }

    @AfterEach
    void stop() {
        if (worker != null) {
            worker.close();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private void startWorker(SslContext ssl) {
        worker = GpuWorker.start(
                new WorkerConfig("127.0.0.1", 0, 0, WORKER, Duration.ofSeconds(30)),
                new EmulatedBackend(1, 1L << 30, TestKernels.twins()),
                (token, window) -> {},
                ssl,
                line -> {});
    }

    /** A session with a token as the tracker issues it, pinning {@code pin} if any; no TLS context of the caller's. */
    private RemoteGpu connect(Optional<CertificatePin> pin) {
        String token = issuer.issue("42", 0, WORKER, pin, Duration.ofMinutes(1));
        return RemoteGpu.connect(
                group,
                new WorkerEndpoint(WORKER, "127.0.0.1", worker.address().getPort(), token, () -> {}),
                VaWindow.forVgpu(0),
                RemoteConfig.defaults().withConnectTimeout(Duration.ofSeconds(10)),
                null);
    }

    @Test
    void eachWorkerMakesItsOwnKeyPair() {
        assertNotEquals(identity.pin(), stranger.pin());
        assertEquals(identity.pin(), CertificatePin.of(identity.certificate()));
    }

    @Test
    void theClientSpeaksTlsWithThePinnedWorker() throws Exception {
        startWorker(identity.serverContext());
        try (RemoteGpu gpu = connect(Optional.of(identity.pin()))) {
            WorkloadResult result = new MatMulWorkload().run(gpu, 1, 3);
            assertTrue(result.passed(), result.errorSummary());
        }
        assertTrue(worker.awaitReport().clean());
    }

    @Test
    void aWorkerWithAnotherCertificateIsRefusedNamingBothFingerprints() {
        startWorker(stranger.serverContext());
        VgpuException refused = assertThrows(VgpuException.class, () -> connect(Optional.of(identity.pin())));
        assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code(), refused.getMessage());
        String message = refused.getMessage();
        assertTrue(message.contains("TLS with worker " + WORKER + " at 127.0.0.1:"), message);
        assertTrue(
                message.contains("the worker's certificate is " + stranger.pin() + ", not the " + identity.pin()
                        + " its session token pins"),
                message);
    }

    @Test
    void aClientWithoutAPinIsToldTheWorkerSpeaksTlsOnly() {
        startWorker(identity.serverContext());
        VgpuException refused = assertThrows(VgpuException.class, () -> connect(Optional.empty()));
        assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code(), refused.getMessage());
        assertTrue(
                refused.getMessage()
                        .contains("worker " + WORKER + " speaks TLS only, and this client connected in" + " plain TCP"),
                refused.getMessage());
    }

    @Test
    void aPinningClientRefusesAPlainWorker() {
        startWorker(null);
        VgpuException refused = assertThrows(VgpuException.class, () -> connect(Optional.of(identity.pin())));
        String message = refused.getMessage();
        assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code(), message);
        assertTrue(message.contains("TLS with worker " + WORKER + " at 127.0.0.1:"), message);
        assertTrue(message.contains("the peer does not speak TLS"), message);
        assertTrue(message.contains("its session token pins a TLS certificate"), message);
    }
}
