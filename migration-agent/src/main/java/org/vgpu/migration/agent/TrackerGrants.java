package org.vgpu.migration.agent;

import org.vgpu.common.net.Endpoint;

/**
 * What a tracker's command gives the job before its vGPU moves: a node GPU its runtime may open from then on, or a
 * worker with the session token for it. The job's targets honour them ({@code JobTargets} in vgpu-job); only a
 * command whose mac verifies makes a grant.
 */
public interface TrackerGrants {
    /**
     * Lets the job's runtime open node GPU {@code nodeGpu} (Slurm's index).
     *
     * @return whether this granted it; false when the job had it already
     */
    boolean grantLocalGpu(int nodeGpu);

    /** Withdraws the grant of {@code nodeGpu} that a move which failed made. */
    void withdrawLocalGpu(int nodeGpu);

    /** Lets vGPU {@code vgpu} open a session on {@code worker} with {@code sessionToken}. */
    void grantWorker(int vgpu, Endpoint worker, String sessionToken);
}
