package org.vgpu.migration;

import java.time.Duration;

import org.vgpu.common.error.ConfigException;

/**
 * How migrations copy and how long they wait.
 *
 * @param chunkBytes     size of one staging buffer: regions larger than it are copied in pieces,
 *                       smaller ones are packed together into one buffer
 * @param stagingBuffers how many staging buffers the copy rotates through; with two or more, reading
 *                       the next batch from the source overlaps writing the earlier ones to the target
 * @param lockTimeout    how long the migration waits for calls in flight before giving up
 * @param verifyCopies   whether every copied byte is read back from the target and compared with
 *                       the source before the switch (doubles the copy traffic; for tests and audits)
 */
public record MigrationConfig(long chunkBytes, int stagingBuffers, Duration lockTimeout, boolean verifyCopies) {
    /** 16 MiB pieces reach a PCIe link's full pinned bandwidth while a few of them stay small. */
    public static final long DEFAULT_CHUNK_BYTES = 16L << 20;
    /**
     * Three buffers: two batches queued at the source, so a remote source has the next one when it
     * finishes one, and one being written to the target.
     */
    public static final int DEFAULT_STAGING_BUFFERS = 3;

    public static final MigrationConfig DEFAULTS =
            new MigrationConfig(DEFAULT_CHUNK_BYTES, DEFAULT_STAGING_BUFFERS, Duration.ofSeconds(30), false);

    public MigrationConfig {
        if (chunkBytes < 4096 || chunkBytes > (1L << 30)) {
            throw invalid("migration chunk must be 4 KiB to 1 GiB, got " + chunkBytes);
        }
        if (stagingBuffers < 1 || stagingBuffers > 8) {
            throw invalid("staging buffers must be 1 to 8, got " + stagingBuffers);
        }
        if (lockTimeout == null || lockTimeout.isNegative() || lockTimeout.isZero()) {
            throw invalid("lock timeout must be positive, got " + lockTimeout);
        }
    }

    public MigrationConfig withVerifyCopies(boolean verify) {
        return new MigrationConfig(chunkBytes, stagingBuffers, lockTimeout, verify);
    }

    public MigrationConfig withChunkBytes(long bytes) {
        return new MigrationConfig(bytes, stagingBuffers, lockTimeout, verifyCopies);
    }

    public MigrationConfig withStagingBuffers(int buffers) {
        return new MigrationConfig(chunkBytes, buffers, lockTimeout, verifyCopies);
    }

    public MigrationConfig withLockTimeout(Duration timeout) {
        return new MigrationConfig(chunkBytes, stagingBuffers, timeout, verifyCopies);
    }

    private static ConfigException invalid(String detail) {
        return new ConfigException(ConfigException.Code.INVALID, detail);
    }
}
