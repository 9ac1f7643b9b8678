package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;

/**
 * The VirtualGpu contract on the remote backend, over real worker processes on loopback that run
 * the CPU emulation (runs everywhere, CI included). Client and workers share this host, so the
 * bulk bytes go through shared memory; {@link InBandRemoteGpuConformanceTest} runs the contract
 * with them in the frames.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        return new RemoteBackend(new SpawnedWorkers("emulated", Backends.emulated()), RemoteConfig.defaults(), null);
    }

    @Test
    void bulkBytesGoThroughSharedMemory() {
        RemoteGpu remote = assertInstanceOf(RemoteGpu.class, gpu);
        assertTrue(remote.bulkPathDescription().startsWith("same-host shared memory"), remote.bulkPathDescription());
    }
}
