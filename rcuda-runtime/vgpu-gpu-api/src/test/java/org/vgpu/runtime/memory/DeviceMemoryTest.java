package org.vgpu.runtime.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;

class DeviceMemoryTest {
    private static final long G = VaWindow.GRANULARITY;
    private final VaWindow window = new VaWindow(0, VaWindow.DEFAULT_BASE, 16 * G);
    private final DeviceMemory memory = new DeviceMemory(window, 0);

    @Test
    void onlyTheFirstSmallAllocationOfAChunkNamesItNew() {
        DeviceMemory.Placement first = memory.allocate(4096);
        assertEquals(new Allocation(window.base(), G, G), first.newChunk());
        assertEquals(new Allocation(window.base(), 4096, 4096), first.allocation());
        DeviceMemory.Placement second = memory.allocate(100);
        assertNull(second.newChunk());
        assertEquals(window.base() + 4096, second.allocation().address());
        assertEquals(256, second.allocation().mappedBytes(), "rounded to the 256-byte alignment");
        assertEquals(G, memory.mappedBytes());
    }

    @Test
    void aLargeAllocationIsItsOwnChunkCarryingItsRequestedSize() {
        memory.allocate(64);
        DeviceMemory.Placement large = memory.allocate(DeviceMemory.SHARED_LIMIT + 1);
        assertEquals(large.allocation(), large.newChunk());
        assertEquals(new Allocation(window.base() + G, DeviceMemory.SHARED_LIMIT + 1, G), large.allocation());
        assertEquals(
                large.allocation(), memory.free(large.allocation().address()).emptiedChunk());
    }

    @Test
    void aChunkIsEmptiedByItsLastFreeAndReusedOnlyAfterItsReclaim() {
        long a = memory.allocate(4096).allocation().address();
        long b = memory.allocate(4096).allocation().address();
        assertNull(memory.free(a).emptiedChunk());
        Allocation emptied = memory.free(b).emptiedChunk();
        assertNotNull(emptied);
        assertEquals(window.base(), emptied.address());
        assertEquals(window.base() + G, memory.allocate(10).allocation().address(), "not while it is being unmapped");
        memory.reclaim(emptied);
        assertEquals(
                window.base() + 2 * G,
                memory.allocate(3 * G / 2 + 1).allocation().address(),
                "two chunks");
        assertEquals(window.base(), memory.allocate(G).allocation().address(), "reclaimed");
    }

    @Test
    void aSmallAllocationPlacedAtAnAddressSharesTheChunkThatHoldsIt() {
        DeviceMemory.Placement placed = memory.allocateAt(window.base() + 3 * G + 512, 1000);
        assertEquals(new Allocation(window.base() + 3 * G, G, G), placed.newChunk());
        assertNull(memory.allocateAt(window.base() + 3 * G, 512).newChunk());
        assertEquals(
                window.base() + 3 * G + 1536, memory.allocate(16).allocation().address());
        assertError(ErrorCode.VGPU_WINDOW_FULL, () -> memory.allocateAt(window.base() + 3 * G + 768, 16));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> memory.allocateAt(window.base() + 3 * G + 2000, 16));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> memory.allocateAt(window.base() + G + 256, G));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> memory.allocateAt(window.base() + 5 * G - 256, 512),
                "a small allocation may not run out of its chunk");
        assertEquals(G, memory.mappedBytes(), "failed placements open no chunk");
    }

    @Test
    void lookupsAnswerForTheAppsAllocationNotItsChunk() {
        long a = memory.allocate(1000).allocation().address();
        long big = memory.allocate(3 * G).allocation().address();
        assertEquals(new Allocation(a, 1000, 1024), memory.holding(a + 999));
        assertNull(memory.holding(a + 1000), "the padding belongs to no allocation");
        assertNull(memory.holding(a + G / 2), "nor does the rest of the chunk");
        assertEquals(big, memory.holding(big + 2 * G + 5).address());
        VgpuException e = assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> memory.require(a + 996, 8, "memcpyHtoD destination"));
        assertTrue(e.getMessage().contains("memcpyHtoD destination"), e.getMessage());
        memory.requireAll(
                List.of(
                        new DeviceRegion(a, 1000),
                        new DeviceRegion(big, 3 * G),
                        new DeviceRegion(big + G, 16),
                        new DeviceRegion(a + 10, 10)),
                "gather");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> memory.requireAll(List.of(new DeviceRegion(big, 16), new DeviceRegion(a + 512, 489)), "gather"));
    }

    @Test
    void aRegionMaySpanAdjacentSmallAllocationsOfOneChunkButNoGapAndNoChunkBoundary() {
        List<Long> small = new ArrayList<>();
        for (int i = 0; i < 2 * G / 4096; i++) {
            small.add(memory.allocate(4096).allocation().address());
        }
        long first = small.getFirst();
        long secondChunk = first + G;
        assertEquals(secondChunk, small.get(512), "512 allocations of 4 KiB fill a chunk");
        memory.requireAll(List.of(new DeviceRegion(first + 100, G - 100)), "gather");
        memory.requireAll(List.of(new DeviceRegion(first, 4096), new DeviceRegion(secondChunk, G)), "gather");

        VgpuException acrossChunks = assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> memory.requireAll(List.of(new DeviceRegion(secondChunk - 4096, 8192)), "gather"));
        assertTrue(acrossChunks.getMessage().contains("is not inside a live allocation"), acrossChunks.getMessage());

        memory.free(small.get(3));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> memory.requireAll(List.of(new DeviceRegion(first, 5 * 4096)), "gather"),
                "a freed allocation leaves a gap");
        memory.requireAll(List.of(new DeviceRegion(first, 3 * 4096), new DeviceRegion(first + 4 * 4096, 8192)), "x");

        long padded = memory.allocate(100).allocation().address();
        long next = memory.allocate(100).allocation().address();
        assertEquals(padded + 256, next);
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> memory.requireAll(List.of(new DeviceRegion(padded, 356)), "gather"),
                "the padding after a 100-byte allocation is nobody's");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> memory.require(first, 8192, "memcpyHtoD destination"),
                "a single copy stays inside one allocation");

        long bigA = memory.allocate(2 * G).allocation().address();
        long bigB = memory.allocate(2 * G).allocation().address();
        assertEquals(bigA + 2 * G, bigB, "two large allocations back to back");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> memory.requireAll(List.of(new DeviceRegion(bigA + G, 2 * G)), "gather"),
                "large allocations are mappings of their own: no region spans two");
    }

    @Test
    void placingTheLiveAllocationsAgainGivesTheSameLayout() {
        List<Long> live = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            live.add(memory.allocate(i % 500 == 0 ? G + 1 : 1 + (i * 37L) % 6000)
                    .allocation()
                    .address());
        }
        for (int i = 0; i < live.size(); i += 5) {
            DeviceMemory.Removal removal = memory.free(live.get(i));
            if (removal.emptiedChunk() != null) {
                memory.reclaim(removal.emptiedChunk());
            }
        }
        List<DeviceRegion> state = memory.liveAllocations().stream()
                .map(allocation -> new DeviceRegion(allocation.address(), allocation.requestedBytes()))
                .toList();
        DeviceMemory again = new DeviceMemory(window, 0);
        List<DeviceMemory.Placement> placements = again.placeAll(state);
        assertEquals(
                memory.chunkCount(),
                placements.stream().filter(p -> p.newChunk() != null).count());
        assertEquals(memory.mappedBytes(), again.mappedBytes());
        assertEquals(memory.liveAllocations(), again.liveAllocations());
        for (long bytes : new long[] {3000, 100, 2 * G, 40_000, 1}) {
            assertEquals(memory.allocate(bytes), again.allocate(bytes));
        }
    }

    @Test
    void aFailedPlacementOfManyLeavesNothingBehind() {
        memory.allocate(4096);
        assertError(
                ErrorCode.VGPU_WINDOW_FULL,
                () -> memory.placeAll(List.of(
                        new DeviceRegion(window.base() + 4096, 256),
                        new DeviceRegion(window.base() + 2 * G, 4096),
                        new DeviceRegion(window.base() + 4 * G, 3 * G),
                        new DeviceRegion(window.base() + 2 * G + 1024, 4096))));
        assertEquals(G, memory.mappedBytes());
        assertEquals(1, memory.liveAllocations().size());
        List<DeviceMemory.Placement> placed = memory.placeAll(List.of(
                new DeviceRegion(window.base() + 2 * G, 4096), new DeviceRegion(window.base() + 2 * G + 4096, 64)));
        memory.undo(placed);
        assertEquals(G, memory.mappedBytes(), "undo takes back the chunk the placements opened");
        assertEquals(window.base() + 4096, memory.allocate(256).allocation().address());
    }

    @Test
    void retiringEverythingHandsBackEveryChunkOnce() {
        memory.allocate(10);
        memory.allocate(20);
        memory.allocate(5 * G);
        List<Allocation> chunks = memory.retireAll();
        assertEquals(
                List.of(window.base(), window.base() + G),
                chunks.stream().map(Allocation::address).toList());
        assertEquals(0, memory.mappedBytes());
        assertTrue(memory.liveAllocations().isEmpty());
    }

    private static VgpuException assertError(ErrorCode expected, org.junit.jupiter.api.function.Executable call) {
        return assertError(expected, call, "");
    }

    private static VgpuException assertError(
            ErrorCode expected, org.junit.jupiter.api.function.Executable call, String why) {
        VgpuException e = assertThrows(VgpuException.class, call, why);
        assertEquals(expected, e.code(), () -> why + ": " + e.getMessage());
        return e;
    }
}
