package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteCounters;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.transport.SameHostBulk;

/**
 * A Java program's remote vGPU whose worker is on its host, over real TCP on loopback, the worker in this JVM on the
 * CPU emulation (whose hostRegister locks nothing): its page-locked memory is a region the worker shares, copies
 * between it and the device carry none of their bytes over the connection (nor through the shared slots), and the
 * region goes with its free or the session's end. A client with shared memory off gets its own memory, copied as
 * always.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SameHostPinnedMemoryTest {
    private static final int BYTES = 4 << 20;
    /** A request or a reply without bulk bytes is tens of bytes; a copy's bytes in the frames or slots are far more. */
    private static final long NO_BULK_BYTES = 4096;

    private final EmulatedBackend backend = new EmulatedBackend(1, 1L << 30, TestKernels.twins());
    private final List<String> log = new CopyOnWriteArrayList<>();
    private final EventLoopGroup group = NettyTransport.newEventLoopGroup(1, "test-client", 0);
    private GpuWorker worker;

    @BeforeEach
    void startWorker() {
        worker = GpuWorkerTest.startTestWorker(backend, Duration.ofSeconds(20), GpuWorker.Sessions.ONE, log);
    }

    @AfterEach
    void stop() {
        worker.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        backend.close();
    }

    private RemoteGpu connect() {
        return RemoteGpu.connect(
                group,
                new WorkerEndpoint(
                        "test-worker", "127.0.0.1", worker.address().getPort(), GpuWorkerTest.TOKEN, () -> {}),
                VaWindow.forVgpu(2),
                RemoteConfig.defaults(),
                null);
    }

    private static void fill(MemorySegment memory, int seed) {
        for (long i = 0; i < memory.byteSize() / 8; i++) {
            memory.setAtIndex(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L + seed);
        }
    }

    @Test
    void pinnedMemoryIsARegionTheWorkerSharesAndItsCopiesCarryNoBytes() {
        try (RemoteGpu gpu = connect()) {
            MemorySegment pinned = gpu.memAllocHost(BYTES);
            assertEquals(1, gpu.sharedHostAllocations(), "the allocation is a region of the worker's");
            assertEquals(BYTES, worker.sharedHostBytesHeld());
            long device = gpu.memAlloc(BYTES);
            fill(pinned, 1);
            MemorySegment expected = MemorySegment.ofArray(new byte[BYTES]).copyFrom(pinned);

            RemoteCounters before = gpu.counters();
            gpu.memcpyHtoD(device, pinned, BYTES);
            pinned.fill((byte) 0);
            gpu.memcpyDtoH(pinned, device, BYTES);
            RemoteCounters after = gpu.counters();

            assertEquals(-1, pinned.mismatch(expected), "the bytes went to the device and came back");
            assertEquals(2, after.calls() - before.calls(), "one request each way, not chunks");
            assertTrue(after.bytesSent() - before.bytesSent() < NO_BULK_BYTES, "sent " + after + " after " + before);
            assertTrue(
                    after.bytesReceived() - before.bytesReceived() < NO_BULK_BYTES,
                    "received " + after + " after " + before);

            // pageable memory read back: the device holds what the region held
            byte[] readBack = new byte[BYTES];
            gpu.memcpyDtoH(MemorySegment.ofArray(readBack), device, BYTES);
            assertEquals(-1, MemorySegment.ofArray(readBack).mismatch(expected));

            gpu.memFreeHost(pinned);
            assertEquals(0, gpu.sharedHostAllocations());
            assertEquals(0, worker.sharedHostBytesHeld(), "freed on the worker with the memory");
        }
    }

    @Test
    void asynchronousCopiesOfPartsOfARegionNameItWithoutWaitingAndLandAtTheirOffsetsOnTheirStream() {
        try (RemoteGpu gpu = connect()) {
            MemorySegment pinned = gpu.memAllocHost(BYTES);
            long device = gpu.memAlloc(BYTES);
            gpu.memsetD8(device, (byte) 0, BYTES);
            fill(pinned, 7);
            StreamHandle stream = gpu.streamCreate();
            long part = 1 << 20;
            RemoteCounters before = gpu.counters();
            gpu.memcpyHtoDAsync(device + 4096, pinned.asSlice(8192, part), part, stream);
            gpu.memcpyDtoHAsync(pinned.asSlice(2 * part, part), device + 4096, part, stream);
            assertEquals(
                    before.bytesReceived(),
                    gpu.counters().bytesReceived(),
                    "sent without waiting: no answer came before the synchronize");
            gpu.streamSynchronize(stream);
            RemoteCounters after = gpu.counters();

            assertTrue(after.bytesSent() - before.bytesSent() < NO_BULK_BYTES, "sent " + after + " after " + before);
            assertTrue(after.bytesReceived() - before.bytesReceived() < NO_BULK_BYTES, "received " + after);
            assertEquals(
                    -1,
                    pinned.asSlice(2 * part, part).mismatch(pinned.asSlice(8192, part)),
                    "the part copied from offset 8192 came back at offset 2 MiB");
            byte[] start = new byte[4096];
            gpu.memcpyDtoH(MemorySegment.ofArray(start), device, 4096);
            assertEquals(-1, MemorySegment.ofArray(start).mismatch(MemorySegment.ofArray(new byte[4096])));

            // a small one names its region too: none of its bytes are in the frames
            RemoteCounters small = gpu.counters();
            gpu.memcpyHtoDAsync(device, pinned.asSlice(3 * part, 4096), 4096, stream);
            gpu.streamSynchronize(stream);
            assertTrue(gpu.counters().bytesSent() - small.bytesSent() < 4096, "sent " + gpu.counters());
            gpu.memcpyDtoH(MemorySegment.ofArray(start), device, 4096);
            assertEquals(-1, MemorySegment.ofArray(start).mismatch(pinned.asSlice(3 * part, 4096)));
        }
    }

    @Test
    void aCopyPastTheEndOfPinnedMemoryIsRefusedBeforeAnyRequest() {
        try (RemoteGpu gpu = connect()) {
            MemorySegment pinned = gpu.memAllocHost(8192);
            long device = gpu.memAlloc(1 << 20);
            // the client's own check refuses a length beyond the segment: the region's bound is never tried
            VgpuException refused =
                    assertThrows(VgpuException.class, () -> gpu.memcpyHtoD(device, pinned.asSlice(4096), 8192));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, refused.code(), refused.getMessage());
            gpu.memcpyHtoD(device, pinned.asSlice(4096), 4096);
        }
    }

    @Test
    void aSessionThatEndsWithoutFreeingItsPinnedMemoryFreesItsRegions() throws Exception {
        try (RemoteGpu gpu = connect()) {
            gpu.memAllocHost(BYTES);
            gpu.memAllocHost(1);
            assertEquals(BYTES + 4096, worker.sharedHostBytesHeld(), "whole pages");
        }
        worker.report().get(20, TimeUnit.SECONDS);
        assertEquals(0, worker.sharedHostBytesHeld(), "the session's end freed its regions");
    }

    @Test
    void aClientWithSharedMemoryOffHasItsOwnPinnedMemoryCopiedThroughTheSession() {
        String before = System.getProperty(SameHostBulk.PROPERTY);
        System.setProperty(SameHostBulk.PROPERTY, "off");
        try (RemoteGpu gpu = connect()) {
            MemorySegment pinned = gpu.memAllocHost(BYTES);
            assertEquals(0, gpu.sharedHostAllocations());
            assertEquals(0, worker.sharedHostBytesHeld(), "the worker was not asked");
            long device = gpu.memAlloc(BYTES);
            fill(pinned, 3);
            RemoteCounters start = gpu.counters();
            gpu.memcpyHtoD(device, pinned, BYTES);
            assertTrue(gpu.counters().bytesSent() - start.bytesSent() >= BYTES, "the bytes travelled in the frames");
            MemorySegment back = MemorySegment.ofArray(new byte[BYTES]);
            gpu.memcpyDtoH(back, device, BYTES);
            assertEquals(-1, back.mismatch(pinned));
        } finally {
            if (before == null) {
                System.clearProperty(SameHostBulk.PROPERTY);
            } else {
                System.setProperty(SameHostBulk.PROPERTY, before);
            }
        }
    }

    @Test
    void aClientOverTcpThatOfferedNoSharedMemoryIsRefusedARegion() {
        try (RawClient client = new RawClient("127.0.0.1", worker.address().getPort())) {
            client.hello(1, GpuWorkerTest.TOKEN, VaWindow.forVgpu(0));
            assertTrue(client.read().startsWith("#1 welcome"));
            String refused = client.send(e -> e.hostRegionCreate(2, 4096)).read();
            assertTrue(
                    refused.startsWith("#2 error")
                            && refused.contains(ErrorCode.CUDA_ERROR_NOT_SUPPORTED.name())
                            && refused.contains("it is on another host"),
                    refused);
            assertEquals(0, worker.sharedHostBytesHeld());
        }
    }
}
