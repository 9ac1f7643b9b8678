package org.vgpu.runtime.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;

class WindowAllocatorTest {
    private static final long G = VaWindow.GRANULARITY;
    private final VaWindow window = new VaWindow(0, VaWindow.DEFAULT_BASE, 16 * G);
    private final WindowAllocator allocator = new WindowAllocator(window);

    @Test
    void roundsToGranularityAndKeepsTheRequestedSize() {
        Allocation a = allocator.allocate(10);
        assertEquals(window.base(), a.address());
        assertEquals(10, a.requestedBytes());
        assertEquals(G, a.mappedBytes());
        assertEquals(window.base() + G, allocator.allocate(G + 1).address());
        assertEquals(3 * G, allocator.mappedBytes());
    }

    @Test
    void refusesWhenTheWindowIsFullAndRecoversAfterFree() {
        Allocation big = allocator.allocate(15 * G);
        VgpuException e = assertThrows(VgpuException.class, () -> allocator.allocate(2 * G));
        assertEquals(ErrorCode.VGPU_WINDOW_FULL, e.code());
        assertTrue(e.getMessage().contains("window"), e.getMessage());
        allocator.release(big.address());
        assertEquals(window.base(), allocator.allocate(16 * G).address());
    }

    @Test
    void freedNeighboursCoalesce() {
        Allocation a = allocator.allocate(G);
        Allocation b = allocator.allocate(G);
        Allocation c = allocator.allocate(G);
        allocator.allocate(13 * G);
        allocator.release(a.address());
        allocator.release(c.address());
        allocator.release(b.address());
        assertEquals(window.base(), allocator.allocate(3 * G).address(), "a, b and c merged into one range");
    }

    @Test
    void placesAllocationsAtGivenAddressesForReplay() {
        Allocation placed = allocator.allocateAt(window.base() + 4 * G, 3 * G);
        assertEquals(window.base() + 4 * G, placed.address());
        assertEquals(window.base(), allocator.allocate(4 * G).address(), "the range below stays free");
        assertEquals(window.base() + 7 * G, allocator.allocate(G).address(), "the range above stays free");
        assertEquals(
                ErrorCode.VGPU_WINDOW_FULL,
                assertThrows(VgpuException.class, () -> allocator.allocateAt(window.base() + 6 * G, G))
                        .code());
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> allocator.allocateAt(window.base() + 100, G))
                        .code());
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> allocator.allocateAt(window.end(), G))
                        .code());
    }

    @Test
    void aRetiredRangeIsNotHandedOutUntilReclaimed() {
        Allocation a = allocator.allocate(G);
        Allocation retired = allocator.retire(a.address());
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> allocator.require(a.address(), 1, "x"))
                        .code());
        assertEquals(window.base() + G, allocator.allocate(G).address(), "the retired range is skipped");
        allocator.reclaim(retired);
        assertEquals(window.base(), allocator.allocate(G).address(), "reclaimed, the range is first fit again");
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> allocator.retire(a.address() + G * 5))
                        .code());
    }

    @Test
    void requireAllWalksAscendingRegionsAndLooksUpTheOthers() {
        Allocation a = allocator.allocate(G);
        Allocation b = allocator.allocate(100);
        Allocation c = allocator.allocate(3 * G);
        List<DeviceRegion> ascending = List.of(
                new DeviceRegion(a.address(), 16),
                new DeviceRegion(a.address() + 64, 64),
                new DeviceRegion(b.address(), 100),
                new DeviceRegion(c.address() + G, G),
                new DeviceRegion(c.address() + 2 * G, G));
        allocator.requireAll(ascending, "x");
        allocator.requireAll(
                List.of(
                        new DeviceRegion(c.address(), 8),
                        new DeviceRegion(a.address(), 8),
                        new DeviceRegion(b.address() + 50, 50)),
                "x");
        allocator.requireAll(List.of(), "x");

        VgpuException gap = assertThrows(
                VgpuException.class,
                () -> allocator.requireAll(
                        List.of(
                                new DeviceRegion(a.address(), 8),
                                new DeviceRegion(b.address() + 100, 1),
                                new DeviceRegion(c.address(), 8)),
                        "gather"));
        assertEquals(
                assertThrows(VgpuException.class, () -> allocator.require(b.address() + 100, 1, "gather"))
                        .getMessage(),
                gap.getMessage(),
                "worded as require words it");
        VgpuException across = assertThrows(
                VgpuException.class,
                () -> allocator.requireAll(
                        List.of(new DeviceRegion(a.address(), 8), new DeviceRegion(a.address() + G - 8, 16)), "x"));
        assertTrue(across.getMessage().contains("is not inside a live allocation"), across.getMessage());
        VgpuException below = assertThrows(
                VgpuException.class,
                () -> allocator.requireAll(
                        List.of(new DeviceRegion(b.address(), 8), new DeviceRegion(window.base() - 8, 8)), "x"));
        assertTrue(below.getMessage().contains("is not inside a live allocation"), below.getMessage());
        allocator.release(b.address());
        assertThrows(
                VgpuException.class,
                () -> allocator.requireAll(
                        List.of(new DeviceRegion(a.address(), 8), new DeviceRegion(b.address(), 8)), "x"),
                "a freed allocation is not live");
    }

    @Test
    void requireChecksWholeRanges() {
        Allocation a = allocator.allocate(100);
        assertEquals(a, allocator.require(a.address(), 100, "x"));
        assertEquals(a, allocator.require(a.address() + 99, 1, "x"));
        assertEquals(a, allocator.require(a.address() + 100, 0, "x"));
        VgpuException e =
                assertThrows(VgpuException.class, () -> allocator.require(a.address() + 50, 51, "memcpy source"));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code());
        assertTrue(e.getMessage().contains("memcpy source"), e.getMessage());
        assertThrows(VgpuException.class, () -> allocator.require(a.address() - 1, 1, "x"));
        assertThrows(VgpuException.class, () -> allocator.require(a.address(), Long.MAX_VALUE, "x"));
    }

    @Test
    void randomAllocateFreeSequencesNeverOverlap() {
        Random random = new Random(42);
        WindowAllocator big = new WindowAllocator(VaWindow.forVgpu(1));
        List<Allocation> live = new ArrayList<>();
        for (int step = 0; step < 5000; step++) {
            if (live.isEmpty() || random.nextInt(3) > 0) {
                live.add(big.allocate(1 + random.nextLong(8 * G)));
            } else {
                big.release(live.remove(random.nextInt(live.size())).address());
            }
        }
        List<Allocation> sorted = big.liveAllocations();
        assertEquals(live.size(), sorted.size());
        long mapped = 0;
        for (int i = 0; i < sorted.size(); i++) {
            Allocation a = sorted.get(i);
            mapped += a.mappedBytes();
            assertEquals(0, a.address() % G);
            assertTrue(big.window().contains(a.address(), a.mappedBytes()));
            if (i > 0) {
                Allocation before = sorted.get(i - 1);
                assertTrue(before.address() + before.mappedBytes() <= a.address(), "overlap at " + i);
            }
        }
        assertEquals(mapped, big.mappedBytes());
    }

    @Test
    void badArgumentsAreRefused() {
        assertThrows(VgpuException.class, () -> allocator.allocate(0));
        assertThrows(VgpuException.class, () -> allocator.release(window.base()));
        assertThrows(VgpuException.class, () -> new WindowAllocator(window, 3));
        assertThrows(VgpuException.class, () -> VaWindow.forVgpu(-1));
        assertThrows(VgpuException.class, () -> VaWindow.forVgpu(VaWindow.MAX_VGPUS));
        assertThrows(VgpuException.class, () -> new VaWindow(0, 12345, G));
    }
}
