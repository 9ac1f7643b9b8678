package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;
import org.vgpu.runtime.remote.transport.SameHostBulk;

/**
 * The VirtualGpu contract on the remote backend over real worker processes with the bulk bytes in the frames on
 * the connection, as between two hosts: this client offers no shared memory ({@code -Dvgpu.bulk.shared-memory=off}
 * while the class runs; the tests of one module run one after another).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InBandRemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        System.setProperty(SameHostBulk.PROPERTY, "off");
        return new RemoteBackend(new SpawnedWorkers("emulated", Backends.emulated()), RemoteConfig.defaults(), null);
    }

    @AfterAll
    void offerSharedMemoryAgain() {
        System.clearProperty(SameHostBulk.PROPERTY);
    }

    @Test
    void bulkBytesGoInTheFrames() {
        RemoteGpu remote = assertInstanceOf(RemoteGpu.class, gpu);
        assertEquals("in-band (frames on the connection): -Dvgpu.bulk.shared-memory=off", remote.bulkPathDescription());
    }
}
