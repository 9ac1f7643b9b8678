package org.vgpu.migration;

/** The steps of a migration, in order; a failure names the step it happened in. */
public enum MigrationStep {
    /** Shut the migration lock: new calls wait, calls in flight finish. */
    LOCK,
    /** Synchronize the source so every queued operation has finished. */
    DRAIN,
    /** Open the target and reserve the window there. */
    OPEN_TARGET,
    /**
     * Load modules, look up functions, create streams and events, map allocations at their addresses: before the
     * lock for everything live then, under it for what the app changed since.
     */
    REPLAY,
    /** Copy every live region from the source to the target. */
    MEM_SYNC,
    /** Compare the target's memory with the source's (when the configuration asks for it). */
    VERIFY,
    /** Make the target the vGPU's backend; past this point there is no rollback. */
    SWITCH,
    /** Free the source's device memory and close it. */
    RELEASE_SOURCE
}
