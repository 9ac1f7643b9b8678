package org.vgpu.migration;

import org.vgpu.runtime.api.VirtualGpu;

/**
 * Fault injection for tests: called at each {@link FaultPoint} of a migration, it may throw (the
 * step fails), break the target (close it, as a dying worker), or change the target's memory (a
 * copy that went wrong). Production vGPUs use {@link #NONE}.
 */
@FunctionalInterface
public interface MigrationFaults {
    MigrationFaults NONE = (point, index, target) -> {};

    /**
     * @param index  which occurrence of the point (allocation or batch number), 0 for single points
     * @param target the target being prepared; null at {@link FaultPoint#OPEN_TARGET}
     */
    void reached(FaultPoint point, int index, VirtualGpu target);
}
