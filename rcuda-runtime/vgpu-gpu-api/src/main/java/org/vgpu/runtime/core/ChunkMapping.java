package org.vgpu.runtime.core;

import java.util.List;
import java.util.Objects;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.memory.Allocation;
import org.vgpu.runtime.memory.DeviceMemory;

/**
 * Device allocations and the chunks that back them: an allocation is placed in {@link DeviceMemory}
 * and the chunks it opened are mapped through the backend's primitives, all or none; a free unmaps
 * the chunk it emptied. The memory's lock is held from placing an allocation until its new chunk is
 * mapped (and from a free until an emptied chunk is unmapped), so that no other thread is handed an
 * address in a chunk not mapped yet; lookups take no lock.
 */
final class ChunkMapping {
    private final DeviceMemory memory;

    ChunkMapping(DeviceMemory memory) {
        this.memory = memory;
    }

    /** Places {@code bytes} and maps the chunk that opened, through {@code gpu}'s primitives. */
    long allocate(ChunkBackedGpu gpu, long bytes) {
        synchronized (memory) {
            DeviceMemory.Placement placement = memory.allocate(bytes);
            mapNewChunks(gpu, List.of(placement));
            return placement.allocation().address();
        }
    }

    void allocateAt(ChunkBackedGpu gpu, long address, long bytes) {
        synchronized (memory) {
            mapNewChunks(gpu, List.of(memory.allocateAt(address, bytes)));
        }
    }

    void allocateAllAt(ChunkBackedGpu gpu, List<DeviceRegion> allocations) {
        synchronized (memory) {
            mapNewChunks(gpu, memory.placeAll(List.copyOf(allocations)));
        }
    }

    /** Maps the chunks that {@code placements} opened, all at once; on failure takes the placements back. */
    private void mapNewChunks(ChunkBackedGpu gpu, List<DeviceMemory.Placement> placements) {
        List<Allocation> chunks = placements.stream()
                .map(DeviceMemory.Placement::newChunk)
                .filter(Objects::nonNull)
                .toList();
        try {
            // one chunk, as an allocation mostly needs, through the one-chunk primitive (a worker's MEM_ALLOC_AT)
            switch (chunks.size()) {
                case 0 -> {}
                case 1 -> gpu.doMap(chunks.getFirst());
                default -> gpu.doMapAll(chunks);
            }
        } catch (RuntimeException e) {
            memory.undo(placements);
            throw e;
        }
    }

    /** Maps each chunk with its own {@code doMap}, all or none. */
    static void mapEach(ChunkBackedGpu gpu, List<Allocation> chunks) {
        int mapped = 0;
        try {
            for (Allocation chunk : chunks) {
                gpu.doMap(chunk);
                mapped++;
            }
        } catch (RuntimeException e) {
            throw unmapAfterFailure(gpu, chunks.subList(0, mapped), e);
        }
    }

    /** Unmaps the chunks mapped before {@code failure}, which it returns with the unmaps' failures suppressed. */
    static RuntimeException unmapAfterFailure(ChunkBackedGpu gpu, List<Allocation> mapped, RuntimeException failure) {
        for (Allocation chunk : mapped) {
            try {
                gpu.doUnmap(chunk);
            } catch (RuntimeException suppressed) {
                failure.addSuppressed(suppressed);
            }
        }
        return failure;
    }

    /** Frees the allocation, and its chunk once no allocation is left in it. */
    void free(ChunkBackedGpu gpu, long address) {
        synchronized (memory) {
            Allocation emptied = memory.free(address).emptiedChunk();
            if (emptied != null) {
                // A range whose unmap failed is never handed out again: it may still be mapped, and a
                // later map there would fail or alias.
                gpu.doUnmap(emptied);
                memory.reclaim(emptied);
            } else {
                gpu.doFreedInChunk();
            }
        }
    }

    /** Unmaps every chunk, as the vGPU closes, collecting the failures. */
    void unmapAll(ChunkBackedGpu gpu, FailureCollector failures) {
        for (Allocation chunk : memory.retireAll()) {
            failures.attempt(() -> gpu.doUnmap(chunk));
        }
    }
}
