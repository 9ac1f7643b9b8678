package org.vgpu.siteconfig.slurm;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A job as Slurm reports it, with what the tracker needs: its GRES request and, once it runs, the
 * GRES it holds on each node set.
 *
 * @param priority         0 for a held job
 * @param requestedPerNode the job's {@code --gres} request by GRES name ({@code gpu}, {@code vgpu})
 * @param allocations      per node set, the GRES Slurm allocated (indices for gpu); empty unless running
 */
public record SlurmJob(long id, String name, String user, String state, String reason, String partition, long priority,
        Map<String, Integer> requestedPerNode, List<NodeAllocation> allocations) {
    public static final String VGPU = "vgpu";

    public SlurmJob {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(partition, "partition");
        requestedPerNode = Map.copyOf(requestedPerNode);
        allocations = List.copyOf(allocations);
    }

    /** The GRES a job holds on some of its nodes. */
    public record NodeAllocation(String nodes, List<GresItem> gres) {
        public NodeAllocation {
            Objects.requireNonNull(nodes, "nodes");
            gres = List.copyOf(gres);
        }
    }

    public boolean asksForVgpu() {
        return requestedPerNode.getOrDefault(VGPU, 0) > 0;
    }

    /** Pending with priority 0: what job_submit.lua makes of a vgpu job until the tracker releases it. */
    public boolean held() {
        return state.equals("PENDING") && priority == 0;
    }
}
