package org.vgpu.runtime.memory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentSkipListMap;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.VaWindow;

/**
 * The device memory of one vGPU as the app sees it, the same on every backend: which chunks of
 * the window are backed by physical memory, and which allocations lie in them. Allocations of at
 * most {@link #SHARED_LIMIT} bytes share chunks of one granule (2 MiB), as CUDA's allocator packs
 * small {@code cuMemAlloc}s into its pages, so 10,000 allocations of 4 KiB take 20 chunks, not
 * 10,000; a larger allocation gets chunks of its own. The owner maps a chunk when a placement
 * names it new, and unmaps it when a free names it emptied.
 *
 * <p>Deterministic: the same sequence of allocations and frees yields the same addresses, and the
 * layout is a function of the live allocations alone (first fit over the chunks in address order,
 * first fit inside a chunk, a chunk released with its last allocation, free ranges merged), so a
 * migration that places the live allocations again with {@link #placeAll} leaves its target where
 * the source was: later allocations land where they would have landed on the source.
 *
 * <p>Whether an allocation shares a chunk follows from its size alone, also when placed at an
 * address: more than {@link #SHARED_LIMIT} bytes, chunks of its own (at a granule-aligned
 * address); at most that, a place in the shared chunk that holds the address. A remote worker is
 * sent chunks, each larger than the limit, so that its table holds chunks, not the app's allocations.
 *
 * <p>Lookups are lock-free, as {@link WindowAllocator}'s; changes take this object's lock.
 */
public final class DeviceMemory {
    /** Allocations of at most this many bytes share chunks: half a granule. */
    public static final long SHARED_LIMIT = VaWindow.GRANULARITY / 2;

    /** Every allocation's address is a multiple of this, as cuMemAlloc aligns (256 bytes at least). */
    public static final long ALIGNMENT = 256;

    /** The chunks: shared ones (their requested bytes are the chunk's), and large allocations'. */
    private final WindowAllocator chunks;
    /** The allocations inside each shared chunk, by the chunk's address. */
    private final ConcurrentSkipListMap<Long, WindowAllocator> shared = new ConcurrentSkipListMap<>();

    /**
     * What an allocation changed: the app's allocation, and the chunk its owner must map before
     * handing the address out (null when the allocation lies in a chunk mapped before).
     */
    public record Placement(Allocation allocation, Allocation newChunk) {}

    /**
     * What a free changed: the app's allocation, and the chunk its owner must now unmap and then
     * {@link #reclaim} (null while other allocations still hold it).
     */
    public record Removal(Allocation allocation, Allocation emptiedChunk) {}

    /** See {@link WindowAllocator#WindowAllocator(VaWindow, long, long)}; chunks are {@link VaWindow#GRANULARITY}. */
    public DeviceMemory(VaWindow window, long reservedTopBytes) {
        this.chunks = new WindowAllocator(window, VaWindow.GRANULARITY, reservedTopBytes);
    }

    public VaWindow window() {
        return chunks.window();
    }

    // ---- changes

    /** Places {@code bytes} first fit: in a shared chunk when small, else in chunks of their own. */
    public synchronized Placement allocate(long bytes) {
        if (bytes > SHARED_LIMIT || bytes <= 0) {
            Allocation own = chunks.allocate(bytes);
            return new Placement(own, own);
        }
        for (WindowAllocator chunk : shared.values()) {
            Allocation allocation = chunk.tryAllocate(bytes);
            if (allocation != null) {
                return new Placement(allocation, null);
            }
        }
        Allocation chunk = chunks.allocate(VaWindow.GRANULARITY);
        return new Placement(openShared(chunk).allocate(bytes), chunk);
    }

    /**
     * Places {@code bytes} at exactly {@code address}: a large allocation at a granule-aligned
     * free range, a small one at a {@link #ALIGNMENT}-aligned free place of the shared chunk that
     * holds the address (new when no chunk is there yet).
     */
    public synchronized Placement allocateAt(long address, long bytes) {
        if (bytes > SHARED_LIMIT || bytes <= 0) {
            Allocation own = chunks.allocateAt(address, bytes);
            return new Placement(own, own);
        }
        long chunkAddress = chunkOf(address);
        WindowAllocator chunk = shared.get(chunkAddress);
        Allocation newChunk = null;
        if (chunk == null) {
            newChunk = chunks.allocateAt(chunkAddress, VaWindow.GRANULARITY);
            chunk = openShared(newChunk);
        }
        try {
            return new Placement(chunk.allocateAt(address, bytes), newChunk);
        } catch (RuntimeException e) {
            if (newChunk != null) {
                shared.remove(chunkAddress);
                chunks.release(chunkAddress);
            }
            throw e;
        }
    }

    /**
     * {@link #allocateAt} for each of {@code allocations} in order, all or none: a migration
     * places a state's allocations so, and its owner then maps all new chunks at once.
     */
    public synchronized List<Placement> placeAll(List<DeviceRegion> allocations) {
        List<Placement> placed = new ArrayList<>(allocations.size());
        try {
            for (DeviceRegion allocation : allocations) {
                placed.add(allocateAt(allocation.address(), allocation.bytes()));
            }
        } catch (RuntimeException e) {
            undo(placed);
            throw e;
        }
        return placed;
    }

    /** Takes back {@code placements} whose new chunks were never mapped, latest first. */
    public synchronized void undo(List<Placement> placements) {
        for (Placement placement : placements.reversed()) {
            Allocation allocation = placement.allocation();
            if (allocation.requestedBytes() > SHARED_LIMIT) {
                chunks.release(allocation.address());
                continue;
            }
            long chunkAddress = chunkOf(allocation.address());
            shared.get(chunkAddress).release(allocation.address());
            if (placement.newChunk() != null) {
                shared.remove(chunkAddress);
                chunks.release(chunkAddress);
            }
        }
    }

    /**
     * Removes the live allocation that starts at {@code address}. A chunk it empties leaves the
     * table but not the window: its range is handed out again only after {@link #reclaim}, once
     * the owner has unmapped it.
     */
    public synchronized Removal free(long address) {
        long chunkAddress = chunkOf(address);
        WindowAllocator chunk = shared.get(chunkAddress);
        if (chunk == null) {
            Allocation own = chunks.retire(address);
            return new Removal(own, own);
        }
        Allocation allocation = chunk.release(address);
        if (chunk.mappedBytes() > 0) {
            return new Removal(allocation, null);
        }
        // Out of the chunk table first: until the chunk leaves the shared ones too, a lookup there
        // still finds it empty and refuses, instead of finding the retiring chunk as a whole.
        Allocation emptied = chunks.retire(chunkAddress);
        shared.remove(chunkAddress);
        return new Removal(allocation, emptied);
    }

    /** Returns an unmapped chunk's range to the window. */
    public synchronized void reclaim(Allocation chunk) {
        chunks.reclaim(chunk);
    }

    /** Forgets every allocation and returns the chunks, which the owner unmaps: the vGPU closes. */
    public synchronized List<Allocation> retireAll() {
        List<Allocation> mapped = chunks.liveAllocations();
        shared.clear();
        for (Allocation chunk : mapped) {
            chunks.retire(chunk.address());
        }
        return mapped;
    }

    private WindowAllocator openShared(Allocation chunk) {
        WindowAllocator inside = new WindowAllocator(
                new VaWindow(window().vgpuIndex(), chunk.address(), VaWindow.GRANULARITY), ALIGNMENT);
        shared.put(chunk.address(), inside);
        return inside;
    }

    // ---- lookups

    /**
     * The live allocation that holds all of {@code [address, address + bytes)}, as {@link
     * WindowAllocator#require} words its refusal: the check is the app's allocation, not its chunk.
     */
    public Allocation require(long address, long bytes, String what) {
        return tableFor(address).require(address, bytes, what);
    }

    /** The live allocation whose requested bytes hold {@code address}; null when there is none. */
    public Allocation holding(long address) {
        return tableFor(address).holding(address);
    }

    /**
     * {@link #require} for every region, each run of regions in one shared chunk (or outside
     * every shared chunk) checked in one walk, as {@link WindowAllocator#requireAll} does. Inside a
     * shared chunk a region may also span allocations that follow one another without a gap: they
     * share the chunk's one mapping, so a migration copies a chunk's packed small allocations as
     * one piece instead of one each. Across chunks, where mappings meet, it may not.
     */
    public void requireAll(List<DeviceRegion> regions, String what) {
        int from = 0;
        while (from < regions.size()) {
            WindowAllocator table = shared.get(chunkOf(regions.get(from).address()));
            int to = from + 1;
            while (to < regions.size() && shared.get(chunkOf(regions.get(to).address())) == table) {
                to++;
            }
            // only a shared chunk's allocations share one mapping that a region may run across
            (table == null ? chunks : table).requireAll(regions.subList(from, to), what, table != null);
            from = to;
        }
    }

    /** The app's live allocations in address order. */
    public List<Allocation> liveAllocations() {
        List<Allocation> live = new ArrayList<>();
        for (Allocation chunk : chunks.liveAllocations()) {
            WindowAllocator inside = shared.get(chunk.address());
            if (inside == null) {
                live.add(chunk);
            } else {
                live.addAll(inside.liveAllocations());
            }
        }
        return live;
    }

    /** Bytes of physical memory the chunks take: what the device has given this vGPU. */
    public long mappedBytes() {
        return chunks.mappedBytes();
    }

    /** How many chunks are mapped. */
    public int chunkCount() {
        return chunks.liveAllocations().size();
    }

    private WindowAllocator tableFor(long address) {
        WindowAllocator inside = shared.get(chunkOf(address));
        return inside == null ? chunks : inside;
    }

    private static long chunkOf(long address) {
        return address & -VaWindow.GRANULARITY;
    }
}
