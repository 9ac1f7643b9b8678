package org.vgpu.migration;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;

/**
 * Runs an app's calls on a {@link MigratableGpu} and migrates it, from the app's own thread between
 * two calls, right after its n-th kernel launch: a deterministic "migrate in the middle of the run"
 * for benchmarks and tests of unmodified workloads.
 */
public final class MigrateAfterLaunches extends ForwardingVirtualGpu {
    private final MigratableGpu migratable;
    private final long launchesBeforeMigration;
    private final MigrationTarget target;
    private long launches;
    private MigrationReport report;

    /** @param launchesBeforeMigration migrate after this many launches; never when it is 0 or the run has fewer */
    public MigrateAfterLaunches(MigratableGpu migratable, long launchesBeforeMigration, MigrationTarget target) {
        super(migratable);
        this.migratable = migratable;
        this.launchesBeforeMigration = launchesBeforeMigration;
        this.target = target;
    }

    @Override
    public void launchKernel(FunctionHandle function, Dim3 grid, Dim3 block, int sharedMemBytes, StreamHandle stream,
                             KernelArgs args) {
        super.launchKernel(function, grid, block, sharedMemBytes, stream, args);
        launches++;
        if (launches == launchesBeforeMigration) {
            report = migratable.migrate(target);
        }
    }

    /** Launches seen so far. */
    public long launches() {
        return launches;
    }

    /** The migration's report; null until it has happened. */
    public MigrationReport report() {
        return report;
    }
}
