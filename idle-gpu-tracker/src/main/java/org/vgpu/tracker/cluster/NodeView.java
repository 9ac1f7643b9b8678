package org.vgpu.tracker.cluster;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import org.vgpu.common.net.Endpoint;

/**
 * One GPU node of the site as the tracker plans with it: Slurm's view of it at one moment joined
 * with the site configuration.
 *
 * @param idleSince   for each GPU no job holds (by index), since when the tracker has seen it idle
 * @param idleCpus    CPUs no job holds: a job placed here needs its CPUs, a holder job one
 * @param idleVgpus   the node's vgpu GRES slots no job holds: a vgpu job pinned here needs its count
 * @param lender      where the node's lender listens
 */
public record NodeView(
        String name,
        boolean schedulable,
        List<String> partitions,
        int idleCpus,
        int idleVgpus,
        Map<Integer, Instant> idleSince,
        long gpuMemoryBytes,
        Endpoint lender) {
    public NodeView {
        Objects.requireNonNull(name, "name");
        partitions = List.copyOf(partitions);
        idleSince = Map.copyOf(idleSince);
        Objects.requireNonNull(lender, "lender");
    }

    public int idleGpus() {
        return idleSince.size();
    }

    /** GPUs idle for at least {@code grace} at {@code now}: only these may be lent to jobs of other nodes. */
    public int lendableGpus(Instant now, Duration grace) {
        return (int) idleSince.values().stream()
                .filter(since -> !since.plus(grace).isAfter(now))
                .count();
    }
}
