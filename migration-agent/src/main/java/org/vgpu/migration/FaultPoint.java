package org.vgpu.migration;

/** Where a {@link MigrationFaults} hook is called during a migration. */
public enum FaultPoint {
    /** Before the target is opened; the target argument is null. */
    OPEN_TARGET,
    /** Before the index-th allocation is replayed on the target. */
    REPLAY_ALLOCATION,
    /** Before the index-th staging batch of the memory copy is read from the source. */
    MEM_SYNC_BATCH,
    /** After the copy, before the target's memory is compared with the source's. */
    VERIFY
}
