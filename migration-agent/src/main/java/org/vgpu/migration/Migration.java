package org.vgpu.migration;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;

/**
 * One run of the migration protocol for one vGPU, timing each step. Until the switch, the source
 * is only read: any failure closes the target, opens the lock again and leaves the app on its
 * source with its data as it was (mrCUDA's record/replay/mem-sync, VOCL's migration lock).
 */
final class Migration {
    private static final Logger LOG = LoggerFactory.getLogger(Migration.class);

    private final MigrationSubject gpu;
    private final MigrationTarget target;
    private final TargetResolver resolver;
    private final MigrationConfig config;
    private final MigrationFaults faults;
    private final MigrationListener listener;
    private final String from;

    private MigrationStep step = MigrationStep.OPEN_TARGET;
    private long openTarget;
    private long replayAhead;
    private long lockWait;
    private long drain;
    private long replay;
    private long memSync;
    private long verify;
    private long blocked;
    private long release;
    private long memSyncBytes;
    private int memSyncRegions;

    /**
     * @param gpu      the vGPU to move
     * @param resolver opens {@code target}
     * @param listener told the outcome, moved or rolled back
     */
    Migration(
            MigrationSubject gpu,
            MigrationTarget target,
            TargetResolver resolver,
            MigrationConfig config,
            MigrationFaults faults,
            MigrationListener listener) {
        this.gpu = gpu;
        this.target = target;
        this.resolver = resolver;
        this.config = config;
        this.faults = faults;
        this.listener = listener;
        this.from = gpu.location();
    }

    MigrationReport run() {
        long start = System.nanoTime();
        VirtualGpu source = gpu.currentBackend();
        VirtualGpu opened = null;
        MemorySync sync = null;
        Replay replaying;
        // Opening the target, preparing the copy and replaying the state as it is now need nothing
        // from the app, so they happen before the lock and the app keeps running meanwhile; under
        // the lock, the replay only catches up with what the app changed since.
        long openedAt = start;
        try {
            step = MigrationStep.OPEN_TARGET;
            faults.reached(FaultPoint.OPEN_TARGET, 0, null);
            opened = resolver.open(target, gpu.window(), source);
            requireCompatible(opened);
            sync = MemorySync.prepare(source, opened, config, gpu.log().liveBytes());
            openedAt = System.nanoTime();
            openTarget = openedAt - start;
            step = MigrationStep.REPLAY;
            replaying = new Replay(gpu.log(), opened);
            replaying.ahead(faults);
        } catch (RuntimeException e) {
            if (step == MigrationStep.OPEN_TARGET) {
                openTarget = System.nanoTime() - start;
            } else {
                replayAhead = System.nanoTime() - openedAt;
            }
            throw rolledBack(e, sync, opened);
        }
        long prepared = System.nanoTime();
        replayAhead = prepared - openedAt;

        step = MigrationStep.LOCK;
        try {
            gpu.gate().shut(config.lockTimeout());
        } catch (RuntimeException e) {
            lockWait = System.nanoTime() - prepared;
            blocked = lockWait;
            throw rolledBack(e, sync, opened);
        }
        long locked = System.nanoTime();
        lockWait = locked - prepared;
        List<DeviceRegion> regions;
        try {
            step = MigrationStep.DRAIN;
            drainSource(source);
            EventTimes.Departure departure = gpu.eventTimes().leaving(source, gpu.log()::backendEvent);
            long drained = System.nanoTime();
            drain = drained - locked;

            step = MigrationStep.REPLAY;
            ReplayLog.Rebinding rebinding = replaying.catchUp(faults);
            regions = replaying.allocations();
            long replayed = System.nanoTime();
            replay = replayed - drained;

            step = MigrationStep.MEM_SYNC;
            memSyncRegions = regions.size();
            memSyncBytes =
                    sync.copy(regions, faults) + sync.copyGlobals(gpu.log().globals());
            long copied = System.nanoTime();
            memSync = copied - replayed;

            step = MigrationStep.VERIFY;
            faults.reached(FaultPoint.VERIFY, 0, opened);
            if (config.verifyCopies()) {
                MemorySync.verify(source, opened, regions, config);
            }
            verify = System.nanoTime() - copied;

            step = MigrationStep.SWITCH;
            gpu.switchTo(opened, target, rebinding);
            gpu.eventTimes().arrived(opened, departure);
        } catch (RuntimeException e) {
            // The app goes on with its source at once; the target it never used is closed meanwhile.
            gpu.gate().reopen();
            blocked = System.nanoTime() - prepared;
            throw rolledBack(e, sync, opened);
        }
        gpu.gate().reopen();
        long unlocked = System.nanoTime();
        blocked = unlocked - prepared;

        step = MigrationStep.RELEASE_SOURCE;
        String releaseError = "";
        try {
            FailureCollector release = new FailureCollector();
            release.attempt(sync::close);
            release.attempt(() -> gpu.release(source, regions));
            release.rethrow();
        } catch (RuntimeException e) {
            // The vGPU runs on its target; a source that fails to let go (a dead worker) is only reported.
            releaseError = "the vGPU moved, but releasing its source failed: " + VgpuFailure.describe(e);
            LOG.warn("vGPU {}: {}", gpu.window().vgpuIndex(), releaseError, e);
        }
        release = System.nanoTime() - unlocked;
        MigrationReport report = report(MigrationReport.Outcome.MIGRATED, null, releaseError);
        notifyListener(report);
        return report;
    }

    /**
     * Synchronizes the source. An error there belongs to the app's earlier asynchronous work: the
     * migration stops (nothing has changed) and the app gets the error at its next synchronizing
     * call, as it would have without the migration.
     */
    private void drainSource(VirtualGpu source) {
        try {
            source.ctxSynchronize();
        } catch (VgpuException e) {
            gpu.deferError(e);
            throw e;
        }
    }

    /** The target must run what the app was written for, by the properties it was shown. */
    private void requireCompatible(VirtualGpu opened) {
        DeviceProperties shown = gpu.shownProperties();
        DeviceProperties offered = opened.deviceProperties();
        String problem = null;
        if (!opened.window().equals(gpu.window())) {
            problem = "it opened " + opened.window() + " instead of " + gpu.window();
        } else if (shown.emulated() != offered.emulated()) {
            problem = "the CPU emulation and GPUs do not mix";
        } else if (shown.warpSize() != offered.warpSize()) {
            problem = "warp size " + offered.warpSize() + " instead of " + shown.warpSize();
        } else if (offered.maxThreadsPerBlock() < shown.maxThreadsPerBlock()) {
            problem = "at most " + offered.maxThreadsPerBlock() + " threads per block, the app was shown "
                    + shown.maxThreadsPerBlock();
        } else if (offered.computeCapabilityMajor() * 10 + offered.computeCapabilityMinor()
                < shown.computeCapabilityMajor() * 10 + shown.computeCapabilityMinor()) {
            problem = String.format(
                    "compute capability %d.%d is below the %d.%d the app was shown",
                    offered.computeCapabilityMajor(),
                    offered.computeCapabilityMinor(),
                    shown.computeCapabilityMajor(),
                    shown.computeCapabilityMinor());
        }
        if (problem != null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                    "target " + target + " (" + offered.name() + ") cannot take vGPU "
                            + gpu.window().vgpuIndex() + ": " + problem);
        }
    }

    /**
     * Undoes what the migration built on the target (the source was only read) and reports the
     * failure; the caller reopens the lock if it holds it.
     */
    private MigrationException rolledBack(RuntimeException cause, MemorySync sync, VirtualGpu opened) {
        FailureCollector cleanup = new FailureCollector();
        if (sync != null) {
            cleanup.attempt(sync::close);
        }
        if (opened != null) {
            cleanup.attempt(opened::close);
        }
        try {
            cleanup.rethrow();
        } catch (RuntimeException cleanupFailure) {
            cause.addSuppressed(cleanupFailure);
        }
        // a failure that is no GPU call's gets vgpu's own code, never a CUDA name
        ErrorCode code = cause instanceof VgpuException vgpu ? vgpu.code() : ErrorCode.VGPU_MIGRATION_FAILED;
        if (!(cause instanceof VgpuFailure)) {
            // the report says only "an internal failure"; the exception's own text is for the log
            LOG.warn(
                    "vGPU {}: the migration to {} failed unexpectedly",
                    gpu.window().vgpuIndex(),
                    target,
                    cause);
        }
        String message = VgpuFailure.describe(cause);
        MigrationReport report = report(MigrationReport.Outcome.ROLLED_BACK, step, message);
        notifyListener(report);
        return new MigrationException(code, report, cause);
    }

    private MigrationReport report(MigrationReport.Outcome outcome, MigrationStep failedStep, String error) {
        return new MigrationReport(
                gpu.window().vgpuIndex(),
                from,
                target.toString(),
                outcome,
                failedStep,
                error,
                Duration.ofNanos(openTarget),
                Duration.ofNanos(replayAhead),
                Duration.ofNanos(lockWait),
                Duration.ofNanos(drain),
                Duration.ofNanos(replay),
                memSyncBytes,
                memSyncRegions,
                Duration.ofNanos(memSync),
                Duration.ofNanos(verify),
                Duration.ofNanos(blocked),
                Duration.ofNanos(release),
                Instant.now());
    }

    private void notifyListener(MigrationReport report) {
        try {
            listener.migrationFinished(report);
        } catch (RuntimeException e) {
            LOG.warn("vGPU {}: migration listener failed on {}", gpu.window().vgpuIndex(), report.summary(), e);
        }
    }
}
