package org.vgpu.tracker.slurm;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A node as Slurm reports it.
 *
 * @param state      Slurm's state in scontrol's spelling, base state and flags joined by '+':
 *                   {@code MIXED}, {@code IDLE+DRAIN}, {@code DOWN*} (not responding)
 * @param cpus          the node's CPUs
 * @param allocatedCpus CPUs allocated to jobs; a holder job needs one free, so a GPU on a node
 *                      without a free CPU cannot be lent
 * @param configured GRES counts by name ({@code gpu}, {@code vgpu}), summed over types
 * @param used       allocated GRES counts by name
 */
public record SlurmNode(
        String name,
        String state,
        int cpus,
        int allocatedCpus,
        List<String> partitions,
        Map<String, Integer> configured,
        Map<String, Integer> used) {
    /** States (base or flag) in which Slurm starts no new job on the node. */
    private static final Set<String> UNSCHEDULABLE = Set.of(
            "DOWN",
            "DRAIN",
            "DRAINED",
            "DRAINING",
            "FAIL",
            "FAILING",
            "FUTURE",
            "MAINTENANCE",
            "REBOOT_REQUESTED",
            "REBOOT_ISSUED",
            "POWERED_DOWN",
            "POWERING_DOWN",
            "RESERVED",
            "INVALID_REG",
            "NOT_RESPONDING");

    public SlurmNode {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(state, "state");
        partitions = List.copyOf(partitions);
        configured = Map.copyOf(configured);
        used = Map.copyOf(used);
    }

    public int idleCpus() {
        return Math.max(0, cpus - allocatedCpus);
    }

    /** How many of the named GRES are not allocated. */
    public int idle(String gres) {
        return Math.max(0, configured.getOrDefault(gres, 0) - used.getOrDefault(gres, 0));
    }

    /** False when Slurm would start nothing here (down, drained, not responding, ...): lend nothing from it. */
    public boolean schedulable() {
        if (state.endsWith("*")) {
            return false;
        }
        for (String part : state.split("\\+")) {
            if (UNSCHEDULABLE.contains(part)) {
                return false;
            }
        }
        return true;
    }
}
