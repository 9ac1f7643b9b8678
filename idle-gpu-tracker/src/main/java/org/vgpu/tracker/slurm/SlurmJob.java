package org.vgpu.tracker.slurm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import org.vgpu.siteconfig.HostList;

/**
 * A job as Slurm reports it, with what the tracker needs: its GRES request and, once it runs, the
 * GRES it holds on each node set.
 *
 * @param priority         0 for a held job
 * @param cpus             the CPUs the job needs on each of its nodes (MinCPUsNode): a node must have them free to start it
 * @param requestedPerNode the job's {@code --gres} request by GRES name ({@code gpu}, {@code vgpu})
 * @param allocations      per node set, the GRES Slurm allocated (indices for gpu); empty unless running
 */
public record SlurmJob(
        long id,
        String name,
        String user,
        String state,
        String reason,
        String partition,
        long priority,
        int cpus,
        Map<String, Integer> requestedPerNode,
        List<NodeAllocation> allocations) {
    public static final String VGPU = "vgpu";
    public static final String GPU = "gpu";
    /** Job states in which a job may still run (or runs): anything else has ended for the tracker. */
    private static final Set<String> ACTIVE_STATES =
            Set.of("PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "STOPPED", "RESIZING");

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

    /** Whether the job may still run (or runs); a job in any other state has ended for the tracker. */
    public boolean active() {
        return ACTIVE_STATES.contains(state);
    }

    public boolean asksForVgpu() {
        return requestedPerNode.getOrDefault(VGPU, 0) > 0;
    }

    /**
     * The GPU indices the job holds on {@code node}, from its allocation ({@code GRES=gpu:2(IDX:0-1)});
     * empty when it holds none there or Slurm printed no indices.
     *
     * @throws SlurmException when an allocation's node list is malformed
     */
    public List<Integer> gpuIndicesOn(String node) {
        return gpuIndicesByNode().getOrDefault(node, List.of());
    }

    /**
     * The GPU indices the job holds, by node: each allocation's node list expanded once, for callers
     * that look at every node.
     *
     * @throws SlurmException when an allocation's node list is malformed
     */
    public Map<String, List<Integer>> gpuIndicesByNode() {
        Map<String, List<Integer>> byNode = new LinkedHashMap<>();
        for (NodeAllocation allocation : allocations) {
            List<String> nodes = nodeNames("scontrol show job -d job " + id + " Nodes", allocation.nodes());
            List<Integer> indices = new ArrayList<>();
            for (GresItem gres : allocation.gres()) {
                if (gres.name().equals(GPU)) {
                    indices.addAll(gres.indices());
                }
            }
            if (!indices.isEmpty()) {
                for (String node : nodes) {
                    byNode.computeIfAbsent(node, ignored -> new ArrayList<>()).addAll(indices);
                }
            }
        }
        byNode.replaceAll((node, indices) -> List.copyOf(indices));
        return byNode;
    }

    /**
     * The names of a node list as Slurm prints it ({@code n[1-3,5]}); its {@code (null)} and an empty list are none.
     *
     * @param source names the command and field, for the message
     * @throws SlurmException for a list {@link HostList} refuses, with its reason
     */
    static List<String> nodeNames(String source, String nodes) {
        String stripped = nodes.strip();
        if (stripped.isEmpty() || stripped.equals("(null)")) {
            return List.of();
        }
        try {
            return HostList.expand(stripped);
        } catch (IllegalArgumentException e) {
            throw SlurmException.badOutput(source, e.getMessage());
        }
    }

    /** Pending with priority 0: what job_submit.lua makes of a vgpu job until the tracker releases it. */
    public boolean held() {
        return state.equals("PENDING") && priority == 0;
    }
}
