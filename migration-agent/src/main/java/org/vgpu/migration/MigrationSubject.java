package org.vgpu.migration;

import java.util.List;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * What one {@link Migration} needs of the vGPU it moves: where it runs, what a replay needs, the
 * gate that holds the app's calls back, and the hooks that switch it over or hand an error back to
 * the app. {@link MigratableGpu} implements it out of the app's sight; a migration can be read, and
 * tested, against this contract alone.
 */
interface MigrationSubject {

    /** The window the app's device pointers live in; a target must open the same one. */
    VaWindow window();

    /** The properties the app was shown when the vGPU opened, which a target must honour. */
    DeviceProperties shownProperties();

    /** Where the vGPU runs now, for the report. */
    String location();

    /** The backend the app's calls go to now: the migration's source. */
    VirtualGpu currentBackend();

    /** What a replay rebuilds on the target, and the live allocations a mem-sync copies. */
    ReplayLog log();

    /** The times of the app's recorded events, which a move carries over to the target's clock. */
    EventTimes eventTimes();

    /** Shut by the migration from the drain to the switch, so no call of the app sees a half-moved vGPU. */
    CallGate gate();

    /** An error the source raised while being drained: the app gets it at its next synchronizing call. */
    void deferError(VgpuException error);

    /** Makes {@code target} the backend, with the handles {@code rebinding} maps; called with the gate shut. */
    void switchTo(VirtualGpu target, MigrationTarget newLocation, ReplayLog.Rebinding rebinding);

    /**
     * Gives up the former backend {@code source} after the switch: frees its {@code regions} and
     * closes it, or keeps it while the app holds pinned host buffers it allocated.
     */
    void release(VirtualGpu source, List<DeviceRegion> regions);
}
