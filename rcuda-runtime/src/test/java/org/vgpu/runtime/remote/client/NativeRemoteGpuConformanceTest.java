package org.vgpu.runtime.remote.client;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;
import org.vgpu.runtime.nativegpu.NativeBackend;

/** The VirtualGpu contract on the remote backend over worker processes that drive this machine's GPU 0. */
@Tag("gpu")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NativeRemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        return new RemoteBackend(new SpawnedWorkers("native", NativeBackend.load()), RemoteConfig.defaults(), null);
    }
}
