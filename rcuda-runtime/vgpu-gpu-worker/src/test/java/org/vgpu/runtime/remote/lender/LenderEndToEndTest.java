package org.vgpu.runtime.remote.lender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.netty.handler.ssl.SslContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenIssuer;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteBackend;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.client.WorkerSource;
import org.vgpu.runtime.remote.lender.WorkerStatus.State;
import org.vgpu.runtime.remote.security.TestCertificates;
import org.vgpu.runtime.remote.security.TlsConfig;
import org.vgpu.runtime.workloads.Workloads;

/**
 * The whole path of a borrowed GPU with real worker processes on the CPU emulation: a lender
 * keeps a warm worker, a job opens it over the control socket, gets a token for the worker id the
 * lender reported, runs a workload through the remote backend, and the lender reaps the worker
 * and warms another — in plain TCP and in TLS.
 */
@Timeout(120)
class LenderEndToEndTest {
    private final ChildProcesses children = ChildProcesses.snapshot();

    @TempDir
    Path dir;

    private Lender lender;

    @AfterEach
    void stopLenderAndCheckNoWorkerIsLeft() {
        if (lender != null) {
            lender.close();
        }
        assertEquals(List.of(), children.killLeftovers());
    }

    @Test
    void aJobRunsAWorkloadOnAWorkerBorrowedFromTheLender() {
        runWorkloadOnBorrowedWorker(Optional.empty(), null);
    }

    @Test
    void aJobRunsAWorkloadOnABorrowedWorkerOverTls() throws IOException, InterruptedException {
        TestCertificates worker = TestCertificates.create(dir, "worker");
        SslContext clientTls = new TlsConfig.Client(worker.certificate()).newSslContext();
        runWorkloadOnBorrowedWorker(
                Optional.of(new TlsConfig.Server(worker.certificate(), worker.privateKey())), clientTls);
    }

    private void runWorkloadOnBorrowedWorker(Optional<TlsConfig.Server> workerTls, SslContext clientTls) {
        Path keyFile = dir.resolve("site.key");
        SiteKey key = SiteKey.generate();
        key.writeNewFile(keyFile);
        lender = Lender.start(
                new LenderConfig(
                        new Endpoint("127.0.0.1", 0),
                        "emulated",
                        List.of(0),
                        keyFile,
                        1,
                        1,
                        Optional.of(Duration.ofSeconds(60)),
                        workerTls),
                new WorkerLauncher());
        Await.until(() -> count(State.WARM) == 1);
        String warmId = lender.status().getFirst().workerId();

        LenderWorkers source =
                new LenderWorkers(lender.controlEndpoint(), keyFile, new TokenIssuer(key, Clock.systemUTC()));
        try (RemoteBackend backend = new RemoteBackend(source, RemoteConfig.defaults(), clientTls);
                VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(2))) {
            assertEquals(warmId, source.lastWorkerId);
            assertTrue(
                    Workloads.named("vector-add").orElseThrow().run(gpu, 1, 1).passed());
        }

        Await.until(() ->
                lender.status().stream().noneMatch(worker -> worker.workerId().equals(warmId)));
        Await.until(() -> count(State.WARM) == 1);
    }

    /** The tracker's part: asks the lender for a worker and signs a token for the id it reports. */
    private static final class LenderWorkers implements WorkerSource {
        private final Endpoint control;
        private final Path keyFile;
        private final TokenIssuer issuer;
        private final GpuBackend twin = Backends.emulated();
        volatile String lastWorkerId;

        LenderWorkers(Endpoint control, Path keyFile, TokenIssuer issuer) {
            this.control = control;
            this.keyFile = keyFile;
            this.issuer = issuer;
        }

        @Override
        public int deviceCount() {
            return 1;
        }

        @Override
        public DeviceProperties deviceProperties(int device) {
            return twin.deviceProperties(device);
        }

        @Override
        public WorkerEndpoint open(int device, VaWindow window) {
            try (ControlClient client = new ControlClient(control, keyFile)) {
                String[] reply = client.ask("open " + device).split(" ");
                assertEquals("ok", reply[0], String.join(" ", reply));
                Endpoint at = Endpoint.parse(reply[1]);
                lastWorkerId = reply[2];
                String token = issuer.issue("e2e-job", window.tokenWindow(), lastWorkerId, Duration.ofMinutes(5));
                return new WorkerEndpoint(lastWorkerId, at.host(), at.port(), token, () -> {});
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void close() {
            twin.close();
        }
    }

    private long count(State state) {
        return lender.status().stream()
                .filter(worker -> worker.state() == state)
                .count();
    }
}
