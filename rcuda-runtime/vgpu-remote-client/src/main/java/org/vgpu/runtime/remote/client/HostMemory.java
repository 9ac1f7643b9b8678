package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;

/** What the event loop may do with a caller's host memory. */
final class HostMemory {
    /** A thread that never runs: memory it may access is memory every thread may access. */
    private static final Thread NO_OWNER = Thread.ofPlatform().unstarted(() -> {});

    private HostMemory() {}

    /**
     * Whether threads other than the caller (the event loop) may read or write {@code segment}:
     * true for heap arrays and for global, automatic and shared arenas, false for a confined arena,
     * whose memory belongs to its owner thread alone.
     */
    static boolean isShared(MemorySegment segment) {
        return segment.isAccessibleBy(NO_OWNER);
    }
}
