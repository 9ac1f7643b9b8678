package org.vgpu.runtime.core;

import java.util.List;

import org.vgpu.runtime.memory.Allocation;
import org.vgpu.runtime.memory.DeviceMemory;

/**
 * A vGPU's device memory as its backend backs it: the window's allocations placed in chunks ({@link DeviceMemory}),
 * each chunk backed by the backend's {@link #doMap} when the first allocation opens it and released by its
 * {@link #doUnmap} when the last one leaves, as {@link ChunkMapping} decides. {@link AbstractVirtualGpu} adds the
 * calls; a backend implements these primitives with the calls' ones.
 */
public abstract class ChunkBackedGpu {
    private final DeviceMemory memory;
    private final ChunkMapping chunks;

    ChunkBackedGpu(DeviceMemory memory) {
        this.memory = memory;
        this.chunks = new ChunkMapping(memory);
    }

    /** The chunks and live allocations of this vGPU. */
    public final DeviceMemory memory() {
        return memory;
    }

    final ChunkMapping chunks() {
        return chunks;
    }

    /**
     * Backs a chunk's range ({@code chunk.mappedBytes()} at {@code chunk.address()}) with device
     * memory. A chunk holds either allocations of at most {@link DeviceMemory#SHARED_LIMIT} bytes,
     * its requested bytes then being its own, or one larger allocation, whose requested bytes it
     * carries.
     */
    protected abstract void doMap(Allocation chunk);

    /**
     * Backs every chunk, all or none; one {@link #doMap} each, which a backend whose every call
     * crosses a network replaces by one request.
     */
    protected void doMapAll(List<Allocation> chunks) {
        ChunkMapping.mapEach(this, chunks);
    }

    /** Unmaps the chunks a failed {@link #doMapAll} mapped before {@code failure}, which it returns. */
    protected final RuntimeException unmapAfterFailure(List<Allocation> mapped, RuntimeException failure) {
        return ChunkMapping.unmapAfterFailure(this, mapped, failure);
    }

    /** Frees a chunk's device memory; no allocation lies in it any more. */
    protected abstract void doUnmap(Allocation chunk);

    /**
     * An allocation inside a chunk that stays mapped was freed; its range is handed out again once
     * this returns (the memory lock is held meanwhile). A backend whose queued work may still read
     * or write it waits for that work here, as {@code cuMemFree} does. Nothing by default.
     */
    protected void doFreedInChunk() {}
}
