package org.vgpu.runtime.remote.worker;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;

import org.vgpu.common.security.SiteKey;

/**
 * What a holder job's worker does when its holder is cancelled ({@code scancel} of the holder, by an admin or
 * Slurm): the worker gets SIGTERM, and Slurm waits KillWait (30 s by default) before SIGKILL. Run as the JVM's
 * shutdown hook, it tells the tracker {@code worker-leaving} so that the tracker evacuates the vGPU (home, or to
 * another lender) while this worker still serves it, then keeps serving, because the evacuation reads the vGPU's
 * memory from this worker, until the session ends (the vGPU moved away) or {@link #WAIT} has passed since SIGTERM. When the tracker
 * says nothing can move the vGPU (it told the job so) or cannot be reached, there is nothing to wait for.
 */
final class HolderLeaving implements Runnable {
    /** Under Slurm's default KillWait of 30 s, so the worker ends before SIGKILL and says how. */
    static final Duration WAIT = Duration.ofSeconds(25);

    private final HolderAnnouncement announcement;
    private final GpuWorker worker;
    private final String workerId;
    /** What the worker checks tokens with and proves itself with: the site key, or its lend's key. */
    private final SiteKey key;

    private final Duration wait;
    private final Consumer<String> log;

    HolderLeaving(
            HolderAnnouncement announcement,
            GpuWorker worker,
            String workerId,
            SiteKey key,
            Duration wait,
            Consumer<String> log) {
        this.announcement = Objects.requireNonNull(announcement, "announcement");
        this.worker = Objects.requireNonNull(worker, "worker");
        this.workerId = Objects.requireNonNull(workerId, "workerId");
        this.key = Objects.requireNonNull(key, "key");
        this.wait = Objects.requireNonNull(wait, "wait");
        this.log = Objects.requireNonNull(log, "log");
    }

    @Override
    public void run() {
        long start = System.nanoTime();
        HolderAnnouncement.Leaving leaving = announcement.leave(workerId, key);
        String prefix = "vgpu worker " + workerId + ": leaving (holder cancelled): ";
        if (!leaving.evacuating()) {
            log.accept(prefix + "nothing moves the vGPU: " + leaving.reply());
            return;
        }
        log.accept(prefix + "the tracker evacuates the vGPU (" + leaving.reply() + "); serving until the session"
                + " ends, at most " + describe(wait));
        try {
            // The bound counts from SIGTERM: the tracker's answer took part of it.
            Duration left = wait.minusNanos(System.nanoTime() - start);
            boolean ended = worker.awaitSessionEnd(left.isNegative() ? Duration.ZERO : left);
            log.accept(prefix
                    + (ended
                            ? "the session ended: the vGPU moved away"
                            : "the session still runs after " + describe(wait) + ": ending with it"));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String describe(Duration duration) {
        return duration.toMillis() % 1000 == 0 ? duration.toSeconds() + " s" : duration.toMillis() + " ms";
    }
}
