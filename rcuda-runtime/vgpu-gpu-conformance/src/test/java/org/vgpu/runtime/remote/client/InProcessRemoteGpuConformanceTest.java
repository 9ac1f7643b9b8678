package org.vgpu.runtime.remote.client;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;
import org.vgpu.runtime.remote.protocol.NettyLeaks;

/**
 * The VirtualGpu contract on the remote backend with its workers in this JVM. Besides being quick,
 * it puts both ends of every connection under Netty's paranoid leak detector, which worker
 * processes are not: a buffer the worker or the client forgets to release fails this test.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@ExtendWith(NettyLeaks.class)
class InProcessRemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        return new RemoteBackend(new InProcessWorkers(Duration.ofSeconds(30), 0), RemoteConfig.defaults(), null);
    }
}
