package org.vgpu.migration;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/** Opens the vGPU that a migration moves to: a fresh backend for the same window on the target. */
@FunctionalInterface
public interface TargetResolver {

    /**
     * Opens {@code window} on {@code target}, reserving it there.
     *
     * @param source the backend the vGPU runs on now, for targets that cannot coexist with it
     * @throws org.vgpu.runtime.api.VgpuException when the target cannot serve the window; the
     *         migration then rolls back
     */
    VirtualGpu open(MigrationTarget target, VaWindow window, VirtualGpu source);
}
