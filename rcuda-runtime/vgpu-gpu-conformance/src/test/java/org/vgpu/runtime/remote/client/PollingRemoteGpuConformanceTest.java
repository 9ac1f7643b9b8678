package org.vgpu.runtime.remote.client;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;

/**
 * The VirtualGpu contract with every thread of the session polling before it sleeps, as on
 * machines with many cores (this machine may have too few for the default to turn it on): the
 * waiting app thread, both event loops and the worker's GPU thread take the polling paths.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PollingRemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    private static final long SPIN_NANOS = 20_000;

    @Override
    protected GpuBackend createBackend() {
        RemoteConfig polling =
                new RemoteConfig(64 << 10, 256, 1 << 20, SPIN_NANOS, Duration.ofSeconds(30), Duration.ofSeconds(30));
        return new RemoteBackend(new InProcessWorkers(Duration.ofSeconds(30), SPIN_NANOS), polling, null);
    }
}
