package org.vgpu.bench.migration;

/**
 * What the sections measure with, from {@code vgpu migration-bench}'s options: trials, loop sizes,
 * the live state, the MD app's size, and with {@code full} the complete tables' rows.
 */
record BenchSettings(boolean full, int trials, int iterations, int liveMib, boolean large, int mdScale, int mdRuns) {

    /** The size of the small copies and allocations the sections make. */
    static final long SMALL_COPY = 4096;

    /** The mem-sync table's region sizes: the small regions the copy kernels pack, and regions cut in chunks. */
    private static final long[] REGION_SIZES = {4L << 10, 64L << 20};

    static final long[] ALL_REGION_SIZES = {4L << 10, 64L << 10, 1L << 20, 16L << 20, 64L << 20};
    /** Replay against calls made: two counts three decades apart show it flat. */
    private static final int[] REPLAY_CALLS = {1_000, 1_000_000};

    private static final int[] ALL_REPLAY_CALLS = {1_000, 10_000, 100_000, 1_000_000};
    /** Replay against live objects: two counts show it growing with them. */
    private static final int[] REPLAY_LIVE_OBJECTS = {100, 1_000};

    private static final int[] ALL_REPLAY_LIVE_OBJECTS = {100, 1_000, 10_000};

    long[] regionSizes() {
        return full ? ALL_REGION_SIZES : REGION_SIZES;
    }

    int[] replayCalls() {
        return full ? ALL_REPLAY_CALLS : REPLAY_CALLS;
    }

    int[] replayLiveObjects() {
        return full ? ALL_REPLAY_LIVE_OBJECTS : REPLAY_LIVE_OBJECTS;
    }
}
