package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.NettyLeaks;

/**
 * A copy forwarded from one worker to another through the client ({@link RemoteGpu#forwardAsync}):
 * with a chunk size that cuts regions in two and packs many small ones into a chunk, every region
 * arrives at the same address on the target and nothing else there changes; a target that lacks a
 * region is refused before anything is sent; a target whose worker is gone fails the copy, naming
 * the loss, while the source goes on working.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(NettyLeaks.class)
class RemoteForwardTest {
    /** 96 KiB and a bit: chunks end inside regions and hold many small ones. */
    private static final int CHUNK_BYTES = (96 << 10) + 4093;

    private static final long SPAN = 2 << 20;

    private InProcessWorkers workers;
    private RemoteBackend backend;
    private RemoteGpu source;
    private RemoteGpu target;
    private long base;

    @BeforeEach
    void open() {
        workers = new InProcessWorkers(Duration.ofSeconds(10), 0);
        backend = new RemoteBackend(workers, RemoteConfig.defaults().withChunkBytes(CHUNK_BYTES), null);
        // one window on both sides, as a migration has it: the target holds the same addresses
        source = (RemoteGpu) backend.open(0, VaWindow.forVgpu(0));
        target = (RemoteGpu) backend.open(1, VaWindow.forVgpu(0));
        base = source.memAlloc(SPAN);
        target.memAllocAt(base, SPAN);
    }

    @AfterEach
    void close() {
        source.close();
        target.close();
        backend.close();
        workers.close();
    }

    @Test
    void everyRegionArrivesAtItsAddressAndNothingElseChanges() {
        byte[] sourceBytes = pattern(SPAN, 31);
        byte[] targetBytes = pattern(SPAN, 7);
        source.memcpyHtoD(base, MemorySegment.ofArray(sourceBytes), SPAN);
        target.memcpyHtoD(base, MemorySegment.ofArray(targetBytes), SPAN);
        // a run of small regions with gaps between, then regions larger than a chunk, one ending at the span's end
        List<DeviceRegion> regions = new ArrayList<>();
        for (int k = 0; k < 100; k++) {
            regions.add(new DeviceRegion(base + k * 8192L, 4096 + k));
        }
        regions.add(new DeviceRegion(base + (1 << 20), 300_001));
        regions.add(new DeviceRegion(base + SPAN - 500_000, 500_000));
        StreamHandle sourceStream = source.streamCreate();
        StreamHandle targetStream = target.streamCreate();

        source.forwardAsync(regions, sourceStream, target, targetStream).await();
        target.streamSynchronize(targetStream);

        byte[] expected = targetBytes.clone();
        for (DeviceRegion region : regions) {
            int at = (int) (region.address() - base);
            System.arraycopy(sourceBytes, at, expected, at, (int) region.bytes());
        }
        byte[] actual = new byte[(int) SPAN];
        target.memcpyDtoH(MemorySegment.ofArray(actual), base, SPAN);
        assertArrayEquals(expected, actual);
    }

    @Test
    void aTargetThatLacksARegionIsRefusedBeforeAnythingIsSent() {
        long elsewhere = source.memAlloc(4096);
        long sourceCalls = source.counters().calls();
        long targetCalls = target.counters().calls();
        VgpuException e = assertThrows(
                VgpuException.class,
                () -> source.forwardAsync(
                        List.of(new DeviceRegion(base, 4096), new DeviceRegion(elsewhere, 4096)),
                        StreamHandle.DEFAULT,
                        target,
                        StreamHandle.DEFAULT));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("forward destination"), e.getMessage());
        assertEquals(sourceCalls, source.counters().calls(), "a refused copy sends the source nothing");
        assertEquals(targetCalls, target.counters().calls(), "a refused copy sends the target nothing");
    }

    @Test
    void aCopyToItselfIsRefused() {
        VgpuException e = assertThrows(
                VgpuException.class,
                () -> source.forwardAsync(
                        List.of(new DeviceRegion(base, 4096)), StreamHandle.DEFAULT, source, StreamHandle.DEFAULT));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code());
    }

    @Test
    void aTargetWhoseWorkerIsGoneFailsTheCopyAndTheSourceGoesOn() throws InterruptedException {
        workers.workers.get(1).close();
        awaitLost(target);

        RemoteGpu.Forwarding forwarding = source.forwardAsync(
                List.of(new DeviceRegion(base, SPAN)), StreamHandle.DEFAULT, target, StreamHandle.DEFAULT);
        VgpuException e = assertThrows(VgpuException.class, forwarding::await);
        assertEquals(ErrorCode.VGPU_WORKER_LOST, e.code(), e.getMessage());

        byte[] bytes = pattern(4096, 3);
        source.memcpyHtoD(base, MemorySegment.ofArray(bytes), bytes.length);
        byte[] back = new byte[bytes.length];
        source.memcpyDtoH(MemorySegment.ofArray(back), base, back.length);
        assertArrayEquals(bytes, back);
    }

    /** Waits until a call on {@code gpu} fails for its lost worker. */
    private static void awaitLost(RemoteGpu gpu) throws InterruptedException {
        while (true) {
            try {
                gpu.memGetInfo();
            } catch (VgpuException lost) {
                assertEquals(ErrorCode.VGPU_WORKER_LOST, lost.code(), lost.getMessage());
                return;
            }
            Thread.sleep(10);
        }
    }

    private static byte[] pattern(long bytes, int seed) {
        byte[] data = new byte[(int) bytes];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * seed + (i >> 12));
        }
        return data;
    }
}
