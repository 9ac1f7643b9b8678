package org.vgpu.siteconfig;

import java.time.Duration;
import java.util.Objects;

/**
 * When the tracker's hook moves a borrowed vGPU onto a GPU of its job's own node (the {@code [policy]}
 * keys {@code migrate_home}, {@code migration_cooldown}, {@code migration_end_guard},
 * {@code mem_sync_bandwidth}, {@code replay_cost}).
 *
 * @param migrateHome      off: the hook moves nothing by itself (admins still can, with {@code vgpu migrate})
 * @param cooldown         no second migration of a vGPU within this time of its last one, so nothing ping-pongs
 * @param endGuard         no migration in the last part of a job's time limit, where the move cannot pay
 * @param memSyncBytesPerSecond the bandwidth assumed for copying a vGPU's live memory to its new GPU
 * @param replayCost       the fixed time a move blocks the app besides copying (the lock, draining the source, the
 *                         replay's catch-up; the replay itself runs ahead of the lock)
 */
public record MigrationPolicy(
        boolean migrateHome, Duration cooldown, Duration endGuard, long memSyncBytesPerSecond, Duration replayCost) {
    public static final Duration DEFAULT_COOLDOWN = ConfigKeys.MIGRATION_COOLDOWN.defaultValue();
    public static final Duration DEFAULT_END_GUARD = ConfigKeys.MIGRATION_END_GUARD.defaultValue();
    public static final long DEFAULT_MEM_SYNC_BYTES_PER_SECOND = ConfigKeys.MEM_SYNC_BANDWIDTH.defaultValue();
    public static final Duration DEFAULT_REPLAY_COST = ConfigKeys.REPLAY_COST.defaultValue();

    public MigrationPolicy {
        Objects.requireNonNull(cooldown, "cooldown");
        Objects.requireNonNull(endGuard, "endGuard");
        Objects.requireNonNull(replayCost, "replayCost");
        if (cooldown.isNegative() || endGuard.isNegative() || replayCost.isNegative()) {
            throw new IllegalArgumentException("cooldown, endGuard and replayCost must not be negative");
        }
        if (memSyncBytesPerSecond < 1) {
            throw new IllegalArgumentException("memSyncBytesPerSecond must be positive, got " + memSyncBytesPerSecond);
        }
    }

    /** The migration policy of a file that sets none of its keys. */
    public static MigrationPolicy defaults() {
        return new MigrationPolicy(
                ConfigKeys.MIGRATE_HOME.defaultValue(),
                DEFAULT_COOLDOWN,
                DEFAULT_END_GUARD,
                DEFAULT_MEM_SYNC_BYTES_PER_SECOND,
                DEFAULT_REPLAY_COST);
    }
}
