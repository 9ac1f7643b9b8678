package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;

/** The worker's staging slots: taken round-robin, and reused only once the device and the socket are done with them. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class StagingRingTest {
    private final VirtualGpu gpu = new EmulatedBackend(1, 1L << 30, TestKernels.twins()).open(0, VaWindow.forVgpu(0));

    @AfterEach
    void closeGpu() {
        gpu.close();
    }

    @Test
    void slotsAreTakenRoundRobinAndWrapAround() {
        try (StagingRing ring = new StagingRing(gpu)) {
            List<StagingRing.Slot> taken = new ArrayList<>();
            for (int i = 0; i < 2 * StagingRing.SLOTS + 1; i++) {
                taken.add(ring.acquire());
            }
            for (int i = 0; i < StagingRing.SLOTS; i++) {
                assertSame(taken.get(i), taken.get(i + StagingRing.SLOTS), "slot " + i + " after one turn");
                assertNotSame(taken.get(i), taken.get((i + 1) % StagingRing.SLOTS));
            }
            assertSame(taken.get(0), taken.get(2 * StagingRing.SLOTS));
        }
    }

    @Test
    void copiesThroughEverySlotOfSeveralTurnsLandWhereTheyBelong() {
        long device = gpu.memAlloc(3L * StagingRing.SLOTS * StagingRing.SLOT_BYTES);
        try (StagingRing ring = new StagingRing(gpu)) {
            int chunks = 3 * StagingRing.SLOTS;
            for (int chunk = 0; chunk < chunks; chunk++) {
                StagingRing.Slot slot = ring.acquire();
                MemorySegment host = slot.memory(StagingRing.SLOT_BYTES);
                host.fill((byte) (chunk + 1));
                gpu.memcpyHtoDAsync(
                        device + (long) chunk * StagingRing.SLOT_BYTES,
                        host,
                        StagingRing.SLOT_BYTES,
                        StreamHandle.DEFAULT);
                slot.deviceCopyQueued(StreamHandle.DEFAULT);
            }
            ring.awaitDevice();
            byte[] back = new byte[StagingRing.SLOT_BYTES];
            for (int chunk = 0; chunk < chunks; chunk++) {
                gpu.memcpyDtoH(
                        MemorySegment.ofArray(back), device + (long) chunk * StagingRing.SLOT_BYTES, back.length);
                assertEquals((byte) (chunk + 1), back[0], "first byte of chunk " + chunk);
                assertEquals((byte) (chunk + 1), back[back.length - 1], "last byte of chunk " + chunk);
            }
        }
    }

    @Test
    void aSlotStillBeingWrittenToTheSocketIsNotReused() throws Exception {
        try (StagingRing ring = new StagingRing(gpu)) {
            StagingRing.Slot first = ring.acquire();
            first.memory(Long.BYTES).set(ValueLayout.JAVA_LONG, 0, 42);
            first.sending();
            for (int i = 1; i < StagingRing.SLOTS; i++) {
                ring.acquire();
            }
            AtomicBoolean writtenCalled = new AtomicBoolean();
            Thread socket = Thread.ofPlatform().start(() -> {
                writtenCalled.set(true);
                first.written();
            });
            StagingRing.Slot again = ring.acquire();
            assertTrue(writtenCalled.get(), "the slot came back only after the socket released it");
            assertSame(first, again);
            socket.join();
        }
    }
}
