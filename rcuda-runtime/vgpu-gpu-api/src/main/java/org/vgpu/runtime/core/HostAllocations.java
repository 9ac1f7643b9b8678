package org.vgpu.runtime.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.LongConsumer;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * A vGPU's pinned host allocations by address, each bound to an arena of its own, so that freeing
 * one closes its arena and a segment used after its free throws instead of touching freed memory.
 */
final class HostAllocations {
    private final Map<Long, Arena> arenas = new ConcurrentHashMap<>();

    /** {@code bytes} of host memory from {@code allocator}, which binds it to the arena it is given. */
    MemorySegment allocate(long bytes, BiFunction<Long, Arena, MemorySegment> allocator) {
        OperandChecks.hostAllocation(bytes);
        Arena arena = Arena.ofShared();
        MemorySegment segment;
        try {
            segment = allocator.apply(bytes, arena);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
        arenas.put(segment.address(), arena);
        return segment;
    }

    /** Frees {@code hostMemory}: {@code release} is told its address, then its arena closes, even if release failed. */
    void free(MemorySegment hostMemory, LongConsumer release) {
        Arena arena = hostMemory == null ? null : arenas.remove(hostMemory.address());
        if (arena == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "host memory was not allocated by memAllocHost of this vGPU");
        }
        try {
            release.accept(hostMemory.address());
        } finally {
            arena.close();
        }
    }

    /** Frees every allocation as {@link #free} does, collecting the failures. */
    void freeAll(FailureCollector failures, LongConsumer release) {
        for (Long address : List.copyOf(arenas.keySet())) {
            Arena arena = arenas.remove(address);
            if (arena != null) {
                failures.attempt(() -> release.accept(address));
                failures.attempt(arena::close);
            }
        }
    }
}
