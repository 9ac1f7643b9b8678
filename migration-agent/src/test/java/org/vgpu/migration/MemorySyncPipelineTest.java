package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.FakeWorker;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * What a remote source sees of mem-sync onto a local target, request by request, from a worker the
 * test plays: every buffer's read is on the wire before the first one's data has arrived, a
 * buffer's next read follows as soon as its data has arrived (and been written), and no synchronize
 * is ever sent, not even when mem-sync cleans up, since a worker would answer it only after the
 * requests queued behind it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MemorySyncPipelineTest {
    private static final VaWindow WINDOW = VaWindow.forVgpu(2);
    private static final int REGION_BYTES = 4096;
    private static final int REGIONS = 5;

    private EventLoopGroup group;
    private FakeWorker worker;
    private Emulation local;

    @BeforeEach
    void start() throws Exception {
        group = NettyTransport.newEventLoopGroup(1, "mem-sync-test", 0);
        worker = new FakeWorker();
        local = new Emulation(1);
    }

    @AfterEach
    void stop() throws Exception {
        worker.close();
        local.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void readsRunAheadOfTheWritesAndNoSynchronizeReachesTheWorker() throws Exception {
        CompletableFuture<RemoteGpu> connecting = CompletableFuture.supplyAsync(
                () -> RemoteGpu.connect(group, worker.endpoint(), WINDOW, RemoteConfig.defaults(), null));
        worker.welcome(30_000);
        RemoteGpu source = connecting.get(10, TimeUnit.SECONDS);
        List<DeviceRegion> regions = new ArrayList<>();
        for (int r = 0; r < REGIONS; r++) {
            CompletableFuture<Long> allocated = CompletableFuture.supplyAsync(() -> source.memAlloc(REGION_BYTES));
            if (r == 0) {
                // the first maps the chunk the others share: the worker is asked once
                int id = worker.expect("MEM_ALLOC_AT");
                worker.reply(encoder -> encoder.ok(id));
            }
            regions.add(new DeviceRegion(allocated.get(10, TimeUnit.SECONDS), REGION_BYTES));
        }
        try (VirtualGpu target = local.backend.open(0, WINDOW)) {
            for (DeviceRegion region : regions) {
                target.memAllocAt(region.address(), region.bytes());
            }
            // an eighth of 16 KiB rounds up to one 4 KiB region per batch: five batches through three buffers
            MemorySync sync = MemorySync.prepare(source, target, MigrationConfig.DEFAULTS, REGIONS * REGION_BYTES);
            CompletableFuture<Long> copying =
                    CompletableFuture.supplyAsync(() -> sync.copy(regions, MigrationFaults.NONE));

            for (int stream = 0; stream < 3; stream++) {
                worker.expect("STREAM_CREATE");
            }
            List<Integer> reads = new ArrayList<>(List.of(
                    worker.expect("MEMCPY_DTOH_GATHER"),
                    worker.expect("MEMCPY_DTOH_GATHER"),
                    worker.expect("MEMCPY_DTOH_GATHER")));
            for (int batch = 0; batch < REGIONS; batch++) {
                assertFalse(copying.isDone());
                worker.data(reads.get(batch), false, 0, contents(batch));
                if (batch + 3 < REGIONS) {
                    reads.add(worker.expect("MEMCPY_DTOH_GATHER"));
                    assertEquals(
                            batch + 4,
                            reads.size(),
                            "batch " + (batch + 3) + " is read while batches " + (batch + 1) + " and " + (batch + 2)
                                    + " are still on their way");
                }
            }
            assertEquals(REGIONS * REGION_BYTES, copying.get(10, TimeUnit.SECONDS));
            for (int r = 0; r < REGIONS; r++) {
                byte[] written = new byte[REGION_BYTES];
                target.memcpyDtoH(MemorySegment.ofArray(written), regions.get(r).address(), REGION_BYTES);
                assertArrayEquals(contents(r), written, "region " + r + " on the target");
            }

            sync.close();
        }
        CompletableFuture<Void> goodbye = CompletableFuture.runAsync(source::close);
        for (int stream = 0; stream < 3; stream++) {
            worker.expect("STREAM_DESTROY");
        }
        int id = worker.expect("GOODBYE");
        worker.reply(encoder -> encoder.ok(id));
        goodbye.get(10, TimeUnit.SECONDS);
    }

    private static byte[] contents(int region) {
        byte[] bytes = new byte[REGION_BYTES];
        Arrays.fill(bytes, (byte) (0x11 * (region + 1)));
        return bytes;
    }
}
