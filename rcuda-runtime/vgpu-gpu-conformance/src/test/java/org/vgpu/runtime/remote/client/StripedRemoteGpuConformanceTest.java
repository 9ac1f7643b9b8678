package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.StreamHandle;
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

    /**
     * A synchronous copy into shared native memory, alone in flight, has its chunks read by the stripes straight into
     * that memory (not all of them: a stripe's first chunk, and one whose header came in pieces, arrive with bytes of
     * their body and are copied); an asynchronous one and one into
     * heap memory have theirs copied in after their frames. The bytes are right either way.
     */
    @Test
    void aSynchronousCopyIntoNativeMemoryIsReadStraightInAndAnAsynchronousOneOrIntoHeapMemoryIsNot() {
        RemoteGpu remote = assertInstanceOf(RemoteGpu.class, gpu);
        // 12 chunks of the default 1 MiB and a bit: four on each of the 3 stripes
        int bytes = (11 << 20) + 12_345;
        byte[] data = new byte[bytes];
        for (int i = 0; i < bytes; i++) {
            data[i] = (byte) (i * 7 + (i >> 20));
        }
        long device = gpu.memAlloc(bytes);
        try (Arena arena = Arena.ofShared()) {
            gpu.memcpyHtoD(device, MemorySegment.ofArray(data), bytes);
            MemorySegment host = arena.allocate(bytes);
            long before = remote.chunksReadStraightIn();
            gpu.memcpyDtoH(host, device, bytes);
            assertArrayEquals(data, host.toArray(ValueLayout.JAVA_BYTE));
            long straight = remote.chunksReadStraightIn() - before;
            assertTrue(straight > 0 && straight <= 12, straight + " of 12 chunks read straight in");

            long afterSync = remote.chunksReadStraightIn();
            MemorySegment again = arena.allocate(bytes);
            gpu.memcpyDtoHAsync(again, device, bytes, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            assertArrayEquals(data, again.toArray(ValueLayout.JAVA_BYTE));
            byte[] heap = new byte[bytes];
            gpu.memcpyDtoH(MemorySegment.ofArray(heap), device, bytes);
            assertArrayEquals(data, heap);
            assertEquals(afterSync, remote.chunksReadStraightIn(), "copied in after their frames");
        } finally {
            gpu.memFree(device);
        }
    }

    /**
     * A synchronous copy into memory an earlier asynchronous copy still writes ends with its own bytes there, as
     * stream order says: its chunks are not read straight in while the earlier copy's may still land after them.
     */
    @Test
    void aCopyIntoMemoryAnEarlierCopyStillWritesEndsWithItsOwnBytes() {
        int bytes = 8 << 20;
        byte[] first = new byte[bytes];
        byte[] second = new byte[bytes];
        for (int i = 0; i < bytes; i++) {
            first[i] = (byte) i;
            second[i] = (byte) (i * 3 + 1);
        }
        long fromFirst = gpu.memAlloc(bytes);
        long fromSecond = gpu.memAlloc(bytes);
        try (Arena arena = Arena.ofShared()) {
            gpu.memcpyHtoD(fromFirst, MemorySegment.ofArray(first), bytes);
            gpu.memcpyHtoD(fromSecond, MemorySegment.ofArray(second), bytes);
            MemorySegment host = arena.allocate(bytes);
            for (int round = 0; round < 3; round++) {
                gpu.memcpyDtoHAsync(host, fromFirst, bytes, StreamHandle.DEFAULT);
                gpu.memcpyDtoH(host, fromSecond, bytes);
                assertArrayEquals(second, host.toArray(ValueLayout.JAVA_BYTE), "round " + round);
            }
        } finally {
            gpu.memFree(fromFirst);
            gpu.memFree(fromSecond);
        }
    }
}
