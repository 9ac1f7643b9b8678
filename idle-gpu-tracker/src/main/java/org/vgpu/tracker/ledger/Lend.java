package org.vgpu.tracker.ledger;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

import org.vgpu.common.net.Endpoint;

/**
 * One GPU borrowed for vGPU {@code vgpu} of a job from node {@code node}: kept in Slurm's books by
 * holder job {@code holder} (once submitted), GPU {@code gpu} of that node (once the holder runs),
 * served by the worker {@code workerId} at {@code worker} (once the node's lender opened one).
 */
public record Lend(
        int vgpu,
        String node,
        OptionalLong holder,
        OptionalInt gpu,
        Optional<Endpoint> worker,
        Optional<String> workerId) {
    public Lend {
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(holder, "holder");
        Objects.requireNonNull(gpu, "gpu");
        Objects.requireNonNull(worker, "worker");
        Objects.requireNonNull(workerId, "workerId");
        if (vgpu < 0) {
            throw new IllegalArgumentException("vGPU index must not be negative, got " + vgpu);
        }
        if (worker.isPresent() != workerId.isPresent()) {
            throw new IllegalArgumentException("a lend's worker needs both its endpoint and its id");
        }
    }

    /** A lend planned but not yet secured by a holder job. */
    public static Lend planned(int vgpu, String node) {
        return new Lend(vgpu, node, OptionalLong.empty(), OptionalInt.empty(), Optional.empty(), Optional.empty());
    }

    public Lend withHolder(long holderJob) {
        return new Lend(
                vgpu, node, OptionalLong.of(holderJob), OptionalInt.empty(), Optional.empty(), Optional.empty());
    }

    public Lend withGpu(int index) {
        return new Lend(vgpu, node, holder, OptionalInt.of(index), worker, workerId);
    }

    public Lend withWorker(Endpoint endpoint, String id) {
        return new Lend(vgpu, node, holder, gpu, Optional.of(endpoint), Optional.of(id));
    }
}
