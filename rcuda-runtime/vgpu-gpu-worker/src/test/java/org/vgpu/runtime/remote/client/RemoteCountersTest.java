package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;

/** The counters the tracker's cost model reads: what a remote vGPU forwarded and how long its app waited. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RemoteCountersTest {
    private static final int BYTES = 1 << 20;

    @Test
    void countersGrowWithWhatTheAppForwardsAndWaitsFor() {
        try (InProcessWorkers workers = new InProcessWorkers(Duration.ofSeconds(10), 0);
                RemoteBackend backend = new RemoteBackend(workers, RemoteConfig.defaults(), null);
                Arena arena = Arena.ofConfined()) {
            RemoteGpu gpu = (RemoteGpu) backend.open(0, VaWindow.forVgpu(0));
            try {
                RemoteCounters opened = gpu.counters();

                long device = gpu.memAlloc(BYTES);
                MemorySegment host = arena.allocate(BYTES);
                gpu.memcpyHtoD(device, host, BYTES);
                RemoteCounters afterUpload = gpu.counters();
                assertTrue(afterUpload.calls() >= opened.calls() + 2, afterUpload.toString());
                assertTrue(afterUpload.bytesSent() - opened.bytesSent() >= BYTES, afterUpload.toString());

                gpu.memcpyDtoH(host, device, BYTES);
                RemoteCounters afterDownload = gpu.counters();
                assertTrue(
                        afterDownload.bytesReceived() - afterUpload.bytesReceived() >= BYTES, afterDownload.toString());
                assertTrue(afterDownload.waitNanos() > afterUpload.waitNanos(), "the download waited for the worker");
                assertEquals(afterDownload.bytesSent() + afterDownload.bytesReceived(), afterDownload.bytes());

                RemoteCounters asynchronous = gpu.counters();
                gpu.memsetD8Async(device, (byte) 0, 16, StreamHandle.DEFAULT);
                assertEquals(
                        asynchronous.waitNanos(),
                        gpu.counters().waitNanos(),
                        "a batched call waits for nothing and adds no wait");
            } finally {
                gpu.close();
            }
        }
    }

    @Test
    void sumsAddEveryField() {
        assertEquals(
                new RemoteCounters(3, 5, 7, 9), new RemoteCounters(1, 2, 3, 4).plus(new RemoteCounters(2, 3, 4, 5)));
        assertEquals(2, new RemoteCounters(0, 0, 0, 2_500_000).waitMillis());
    }
}
