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
import org.vgpu.runtime.remote.transport.StripedBulk;

/**
 * The VirtualGpu contract on the remote backend over real worker processes with the bulk bytes striped over extra
 * TCP connections, as to a worker on another host: this client offers no shared memory and stripes to a worker on
 * its own host ({@code -Dvgpu.bulk.shared-memory=off -Dvgpu.bulk.striping=always}, three stripes so that chunks
 * wrap around them unevenly, while the class runs; the tests of one module run one after another).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StripedRemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        System.setProperty(SameHostBulk.PROPERTY, "off");
        System.setProperty(StripedBulk.MODE_PROPERTY, "always");
        System.setProperty(StripedBulk.PROPERTY, "3");
        return new RemoteBackend(new SpawnedWorkers("emulated", Backends.emulated()), RemoteConfig.defaults(), null);
    }

    @AfterAll
    void stripeOnlyToOtherHostsAgain() {
        System.clearProperty(SameHostBulk.PROPERTY);
        System.clearProperty(StripedBulk.MODE_PROPERTY);
        System.clearProperty(StripedBulk.PROPERTY);
    }

    @Test
    void bulkBytesGoOverTheStripes() {
        RemoteGpu remote = assertInstanceOf(RemoteGpu.class, gpu);
        assertEquals("striped over 3 TCP connections (one event loop each)", remote.bulkPathDescription());
    }
}
