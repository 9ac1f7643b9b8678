package org.vgpu.bench.remote;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;
import org.vgpu.runtime.remote.security.TlsConfig;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * The processes the benchmark measures against: the GPU worker, started as a lender starts one
 * (its own site key and token), and the plain-socket baseline's peer, on the same host.
 */
final class BenchWorker implements AutoCloseable {
    private static final String WORKER_ID = "bench-worker";

    private final ThrowawaySiteKey siteKey;
    private final LaunchedWorker process;
    private final PlainSocketPeer baseline;
    private final EventLoopGroup group = NettyTransport.newEventLoopGroup(
            1, "vgpu-bench-io", RemoteConfig.defaults().spinNanos());

    private BenchWorker(ThrowawaySiteKey siteKey, LaunchedWorker process, PlainSocketPeer baseline) {
        this.siteKey = siteKey;
        this.process = process;
        this.baseline = baseline;
    }

    static BenchWorker start(String host, String backend, int device) {
        return start(host, backend, device, false);
    }

    /** @param tls the worker speaks TLS with a self-signed certificate, which the session's token pins */
    static BenchWorker start(String host, String backend, int device, boolean tls) {
        ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("vgpu-remote-bench");
        LaunchedWorker process = null;
        try {
            WorkerSpec spec = new WorkerSpec(
                    new Endpoint(host, 0),
                    backend,
                    device,
                    WORKER_ID,
                    siteKey.keyFile(),
                    tls ? Optional.of(new TlsConfig.SelfSigned()) : Optional.empty(),
                    Optional.of(Duration.ofSeconds(120)));
            process = new WorkerLauncher().launch(spec);
            PlainSocketPeer baseline = PlainSocketPeer.start(host);
            return new BenchWorker(siteKey, process, baseline);
        } catch (RuntimeException e) {
            if (process != null) {
                process.close();
            }
            siteKey.close();
            throw e;
        }
    }

    /** A session on {@code window}, with a token for exactly that window (the worker checks it). */
    VirtualGpu connect(VaWindow window) {
        Endpoint at = process.endpoint();
        String token = siteKey.issuer()
                .issue("remote-bench", window.tokenWindow(), WORKER_ID, process.certificate(), Duration.ofHours(12));
        return RemoteGpu.connect(
                group,
                new WorkerEndpoint(WORKER_ID, at.host(), at.port(), token, () -> {}),
                window,
                RemoteConfig.defaults(),
                null);
    }

    /** Where the plain-socket baseline's peer listens. */
    Endpoint baseline() {
        return baseline.endpoint();
    }

    /** Where the peer's Netty echo server listens. */
    Endpoint nettyEcho() {
        return baseline.nettyEcho();
    }

    @Override
    public void close() {
        try {
            process.onExit().get(10, TimeUnit.SECONDS);
        } catch (Exception stillRunning) {
            // close() stops it
        }
        process.close();
        baseline.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        siteKey.close();
    }
}
