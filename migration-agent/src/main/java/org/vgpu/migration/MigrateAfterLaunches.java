package org.vgpu.migration;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;

/**
 * Runs an app's calls on a {@link MigratableGpu} and starts its migration right after the app's n-th
 * kernel launch: a "migrate in the middle of the run" for benchmarks and tests of unmodified
 * workloads. The migration runs on {@code migrator}: {@code Runnable::run} migrates on the app's own
 * thread between two calls (deterministic: the app waits for every step); a thread of its own
 * migrates as {@link org.vgpu.migration.agent.MigrationAgent} does, while the app goes on calling
 * and waits only while the migration lock is shut.
 */
public final class MigrateAfterLaunches extends ForwardingVirtualGpu {
    private final MigratableGpu migratable;
    private final long launchesBeforeMigration;
    private final MigrationTarget target;
    private final Executor migrator;
    private final CompletableFuture<MigrationReport> migration = new CompletableFuture<>();
    private long launches;

    /** @param launchesBeforeMigration migrate after this many launches; never when it is 0 or the run has fewer */
    public MigrateAfterLaunches(
            MigratableGpu migratable, long launchesBeforeMigration, MigrationTarget target, Executor migrator) {
        super(migratable);
        this.migratable = migratable;
        this.launchesBeforeMigration = launchesBeforeMigration;
        this.target = Objects.requireNonNull(target, "target");
        this.migrator = Objects.requireNonNull(migrator, "migrator");
    }

    @Override
    public void launchKernel(
            FunctionHandle function, Dim3 grid, Dim3 block, int sharedMemBytes, StreamHandle stream, KernelArgs args) {
        super.launchKernel(function, grid, block, sharedMemBytes, stream, args);
        launches++;
        if (launches == launchesBeforeMigration) {
            migrator.execute(() -> {
                try {
                    migration.complete(migratable.migrate(target));
                } catch (RuntimeException e) {
                    migration.completeExceptionally(e);
                }
            });
        }
    }

    /** Launches seen so far. */
    public long launches() {
        return launches;
    }

    /**
     * The migration: its report once it has finished, a MigrationException when it rolled back;
     * never done when it was never started.
     */
    public CompletableFuture<MigrationReport> migration() {
        return migration;
    }
}
