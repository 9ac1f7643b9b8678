package org.vgpu.runtime.memory;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;

/**
 * Hands out granularity-aligned ranges of one vGPU's {@link VaWindow} and keeps the table of live
 * allocations. Backend-independent and deterministic: the same sequence of calls yields the same
 * addresses on every backend.
 *
 * <p>First fit over a free list keeps low addresses in use, so a long-running job does not walk
 * through its window. Lookups ({@link #require}) are lock-free because every copy and memset
 * validates its pointers; allocation and free are rare by comparison and take a lock.
 */
public final class WindowAllocator {
    private final VaWindow window;
    private final long granularity;
    /** Live allocations by start address. */
    private final ConcurrentSkipListMap<Long, Allocation> live = new ConcurrentSkipListMap<>();
    /** Free ranges: start address to length. Guarded by {@code this}. */
    private final TreeMap<Long, Long> free = new TreeMap<>();

    private long mappedBytes;

    public WindowAllocator(VaWindow window) {
        this(window, VaWindow.GRANULARITY);
    }

    public WindowAllocator(VaWindow window, long granularity) {
        this(window, granularity, 0);
    }

    /**
     * An allocator that never hands out the window's top {@code reservedTopBytes}, which its owner
     * uses otherwise (a vGPU: for its module variables' addresses).
     */
    public WindowAllocator(VaWindow window, long granularity, long reservedTopBytes) {
        if (granularity <= 0 || Long.bitCount(granularity) != 1 || window.size() % granularity != 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "granularity " + granularity + " must be a power of two dividing the window size");
        }
        if (reservedTopBytes < 0 || reservedTopBytes >= window.size() || reservedTopBytes % granularity != 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "the reserved top of " + reservedTopBytes + " bytes must be granules inside the window");
        }
        this.window = window;
        this.granularity = granularity;
        free.put(window.base(), window.size() - reservedTopBytes);
    }

    public VaWindow window() {
        return window;
    }

    public long granularity() {
        return granularity;
    }

    /** Reserves a range for {@code bytes}; the backend must then back it or call {@link #release}. */
    public synchronized Allocation allocate(long bytes) {
        Allocation allocation = tryAllocate(bytes);
        if (allocation == null) {
            throw new VgpuException(
                    ErrorCode.VGPU_WINDOW_FULL,
                    String.format(
                            "%s has no free range of %d bytes (%d bytes mapped in %d allocations)",
                            window, roundUp(bytes), mappedBytes, live.size()));
        }
        return allocation;
    }

    /**
     * {@link #allocate}, answering null instead of failing when no free range is large enough: a
     * sub-allocator tries chunk after chunk, and an exception per full chunk would cost more than
     * the allocation.
     */
    public synchronized Allocation tryAllocate(long bytes) {
        if (bytes <= 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "allocation size must be > 0, got " + bytes);
        }
        long rounded = roundUp(bytes);
        if (rounded <= 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, "allocation of " + bytes + " bytes is too large");
        }
        if (rounded > window.size() - mappedBytes) {
            return null;
        }
        for (Iterator<Map.Entry<Long, Long>> it = free.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Long, Long> range = it.next();
            long address = range.getKey();
            long length = range.getValue();
            if (length >= rounded) {
                // Read before remove: TreeMap reuses a removed entry object for its successor.
                it.remove();
                if (length > rounded) {
                    free.put(address + rounded, length - rounded);
                }
                Allocation allocation = new Allocation(address, bytes, rounded);
                live.put(address, allocation);
                mappedBytes += rounded;
                return allocation;
            }
        }
        return null;
    }

    /**
     * Places an allocation at a given address, as a replay on a migration target needs.
     * Fails unless the whole granularity-rounded range is free.
     */
    public synchronized Allocation allocateAt(long address, long bytes) {
        long rounded = roundUp(bytes);
        if (bytes <= 0 || address % granularity != 0 || !window.contains(address, rounded)) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format("cannot place %d bytes at 0x%x in %s", bytes, address, window));
        }
        Map.Entry<Long, Long> range = free.floorEntry(address);
        if (range == null || range.getKey() + range.getValue() < address + rounded) {
            throw new VgpuException(
                    ErrorCode.VGPU_WINDOW_FULL,
                    String.format("range 0x%x + %d of %s is not free", address, rounded, window));
        }
        long start = range.getKey();
        long length = range.getValue();
        free.remove(start);
        if (address > start) {
            free.put(start, address - start);
        }
        if (start + length > address + rounded) {
            free.put(address + rounded, start + length - address - rounded);
        }
        Allocation allocation = new Allocation(address, bytes, rounded);
        live.put(address, allocation);
        mappedBytes += rounded;
        return allocation;
    }

    /** Removes the live allocation that starts at {@code address} and returns its range to the free list at once. */
    public synchronized Allocation release(long address) {
        Allocation allocation = retire(address);
        reclaim(allocation);
        return allocation;
    }

    /**
     * Removes the live allocation that starts at {@code address} but keeps its range out of the
     * free list until {@link #reclaim}: a backend unmaps in between, and another thread must not
     * be handed the range while it is still mapped.
     */
    public synchronized Allocation retire(long address) {
        Allocation allocation = live.remove(address);
        if (allocation == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format("0x%x is not the start of a live allocation of %s", address, window));
        }
        mappedBytes -= allocation.mappedBytes();
        return allocation;
    }

    /** Returns the range of a {@link #retire retired} allocation to the free list. */
    public synchronized void reclaim(Allocation allocation) {
        long start = allocation.address();
        long length = allocation.mappedBytes();
        Map.Entry<Long, Long> before = free.floorEntry(start);
        if (before != null && before.getKey() + before.getValue() == start) {
            start = before.getKey();
            length += before.getValue();
            free.remove(before.getKey());
        }
        Long afterLength = free.remove(allocation.address() + allocation.mappedBytes());
        if (afterLength != null) {
            length += afterLength;
        }
        free.put(start, length);
    }

    /**
     * The live allocation that holds all of {@code [address, address + bytes)}.
     *
     * @param what names the operand in the error, e.g. "memcpyHtoD destination"
     */
    public Allocation require(long address, long bytes, String what) {
        Map.Entry<Long, Allocation> entry = live.floorEntry(address);
        if (entry == null || !entry.getValue().contains(address, bytes)) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format(
                            "%s 0x%x (+%d bytes) is not inside a live allocation of vGPU %d%s",
                            what, address, bytes, window.vgpuIndex(), describeNear(entry)));
        }
        return entry.getValue();
    }

    /** The live allocation whose requested bytes hold {@code address}; null when there is none. */
    public Allocation holding(long address) {
        Map.Entry<Long, Allocation> entry = live.floorEntry(address);
        return entry != null && entry.getValue().contains(address, 1) ? entry.getValue() : null;
    }

    /**
     * {@link #require} for every region. Regions in ascending address order, as a gather or scatter
     * of a migration names them, are checked in one walk along the live allocations instead of one
     * lookup each: with thousands of allocations a lookup costs a dozen cache misses, paid per region
     * on both ends of a copy of many small regions. A region below its predecessor is looked up.
     *
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE as {@link #require} words it, for the first region outside
     */
    public void requireAll(List<DeviceRegion> regions, String what) {
        requireAll(regions, what, false);
    }

    /**
     * {@link #requireAll(List, String)}, where {@code acrossAdjacent} also lets a region run on
     * from one allocation into the ones that start where it ends, without a gap: every byte it
     * names is still some live allocation's. For allocations that share one physical mapping
     * (a chunk's), where one copy of many adjacent allocations is as sound as a copy of each.
     */
    public void requireAll(List<DeviceRegion> regions, String what, boolean acrossAdjacent) {
        Map.Entry<Long, Allocation> floor = null;
        Map.Entry<Long, Allocation> ahead = null;
        Iterator<Map.Entry<Long, Allocation>> walk = null;
        long previous = Long.MIN_VALUE;
        for (DeviceRegion region : regions) {
            long address = region.address();
            if (walk == null || address < previous) {
                floor = live.floorEntry(address);
                walk = (floor == null ? live : live.tailMap(floor.getKey(), false))
                        .entrySet()
                        .iterator();
                ahead = null;
            } else {
                // floor stays the last allocation starting at or below the address
                while (ahead != null || walk.hasNext()) {
                    Map.Entry<Long, Allocation> next = ahead != null ? ahead : walk.next();
                    if (next.getKey() > address) {
                        ahead = next;
                        break;
                    }
                    floor = next;
                    ahead = null;
                }
            }
            previous = address;
            if (floor == null
                    || !(floor.getValue().contains(address, region.bytes())
                            || (acrossAdjacent && coveredBackToBack(floor.getValue(), address, region.bytes())))) {
                require(address, region.bytes(), what);
            }
        }
    }

    /**
     * Whether {@code [address, address + bytes)} starts in {@code first} and each allocation after
     * it starts where the one before ends, until the range is covered.
     */
    private boolean coveredBackToBack(Allocation first, long address, long bytes) {
        long end = address + bytes;
        if (!first.contains(address, 1) || end < address) {
            return false;
        }
        long reached = first.end();
        for (Allocation next : live.tailMap(first.address(), false).values()) {
            if (reached >= end || next.address() != reached) {
                break;
            }
            reached = next.end();
        }
        return reached >= end;
    }

    private static String describeNear(Map.Entry<Long, Allocation> entry) {
        if (entry == null) {
            return "";
        }
        Allocation near = entry.getValue();
        return String.format(" (nearest below: 0x%x, %d bytes)", near.address(), near.requestedBytes());
    }

    /** Snapshot of the live allocations in address order. */
    public List<Allocation> liveAllocations() {
        return new ArrayList<>(live.values());
    }

    public synchronized long mappedBytes() {
        return mappedBytes;
    }

    private long roundUp(long bytes) {
        return (bytes + granularity - 1) & -granularity;
    }
}
