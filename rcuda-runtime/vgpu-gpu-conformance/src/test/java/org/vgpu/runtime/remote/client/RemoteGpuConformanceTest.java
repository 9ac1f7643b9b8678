package org.vgpu.runtime.remote.client;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;

/**
 * The VirtualGpu contract on the remote backend, over real worker processes on loopback that run
 * the CPU emulation (runs everywhere, CI included).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        return new RemoteBackend(new SpawnedWorkers("emulated", Backends.emulated()), RemoteConfig.defaults(), null);
    }
}
