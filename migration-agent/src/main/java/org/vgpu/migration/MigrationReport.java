package org.vgpu.migration;

import java.time.Duration;
import java.time.Instant;

/**
 * What one migration did and cost, for the tracker and the agent's history.
 *
 * @param from            where the vGPU ran before, e.g. "gpu 0 (emulated)"
 * @param to              the target as asked, e.g. "lender-3:7400"
 * @param failedStep      the step that failed, null when the vGPU moved
 * @param error           the failure's message; empty when the vGPU moved, unless releasing the source failed
 * @param openTarget      opening the target and preparing the copy's buffers, before the lock (the app runs meanwhile)
 * @param replayAhead     replaying the state as it was then on the target, before the lock (the app runs meanwhile)
 * @param lockWait        time until the calls in flight had left the migration lock
 * @param drain           synchronizing the source
 * @param replay          under the lock, replaying on the target what the app created or destroyed since the
 *                        replay ahead (modules, functions, streams, events, allocations)
 * @param memSyncBytes    bytes copied from the source to the target
 * @param memSyncRegions  live allocations copied
 * @param memSync         the copy
 * @param verify          comparing the copy (zero unless the configuration asks for it)
 * @param blocked         how long the app's calls could not proceed: from taking the lock to releasing it
 * @param release         freeing the source and the copy's buffers after the switch (the app runs meanwhile)
 */
public record MigrationReport(
        int vgpu,
        String from,
        String to,
        Outcome outcome,
        MigrationStep failedStep,
        String error,
        Duration openTarget,
        Duration replayAhead,
        Duration lockWait,
        Duration drain,
        Duration replay,
        long memSyncBytes,
        int memSyncRegions,
        Duration memSync,
        Duration verify,
        Duration blocked,
        Duration release,
        Instant finishedAt) {

    public enum Outcome {
        /** The vGPU runs on the target. */
        MIGRATED,
        /** A step failed; the vGPU runs on its source as before, with its data intact. */
        ROLLED_BACK
    }

    public boolean migrated() {
        return outcome == Outcome.MIGRATED;
    }

    /** Bytes per second of the memory copy; 0 when nothing was copied. */
    public double memSyncBytesPerSecond() {
        double seconds = memSync.toNanos() / 1e9;
        return memSyncBytes == 0 || seconds == 0 ? 0 : memSyncBytes / seconds;
    }

    /** One line, as the agent's socket and history show it. */
    public String summary() {
        String timings = String.format(
                "open %.3f ms, replay ahead %.3f ms, then blocked %.3f ms (lock %.3f, drain %.3f, replay %.3f, mem-sync"
                        + " %d B in %d regions %.3f ms = %.2f GB/s, verify %.3f), release %.3f ms",
                millis(openTarget),
                millis(replayAhead),
                millis(blocked),
                millis(lockWait),
                millis(drain),
                millis(replay),
                memSyncBytes,
                memSyncRegions,
                millis(memSync),
                memSyncBytesPerSecond() / 1e9,
                millis(verify),
                millis(release));
        return migrated()
                ? String.format(
                        "vgpu %d moved %s -> %s: %s%s", vgpu, from, to, timings, error.isEmpty() ? "" : "; " + error)
                : String.format(
                        "vgpu %d stays on %s, migration to %s rolled back at %s: %s; %s",
                        vgpu, from, to, failedStep, error, timings);
    }

    private static double millis(Duration duration) {
        return duration.toNanos() / 1e6;
    }
}
