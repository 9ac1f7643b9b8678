package org.vgpu.bench.migration;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VirtualGpu;

/** Where the benchmark's vGPUs start (the source) and where they move to (a GPU of the local backend). */
interface Placement extends AutoCloseable {

    /** A new migratable vGPU of index {@code vgpu} on the source. */
    MigratableGpu openOnSource(int vgpu);

    /** How the vGPUs {@link #openOnSource} opens migrate. */
    MigrationConfig config();

    /** A plain vGPU of index {@code vgpu} on the source, for raw-copy baselines. */
    VirtualGpu openPlainOnSource(int vgpu);

    /** The backend the target GPU belongs to. */
    GpuBackend local();

    int targetDevice();

    default MigrationTarget target() {
        return new MigrationTarget.LocalGpu(targetDevice());
    }

    /** e.g. "emulated device 0 -> emulated device 1". */
    String describe();

    @Override
    void close();
}
