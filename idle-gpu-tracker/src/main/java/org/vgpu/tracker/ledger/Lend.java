package org.vgpu.tracker.ledger;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

import org.vgpu.common.net.Endpoint;

/**
 * One GPU borrowed for vGPU {@code vgpu} of a job from node {@code node}: kept in Slurm's books by
 * holder job {@code holder} (once submitted), GPU {@code gpu} of that node (once the holder runs),
 * served by the worker {@code workerId} at {@code worker} (once the node's lender opened one).
 *
 * <p>A lend that moved {@code home} is GPU {@code gpu} of the job's own node, kept by the grant
 * holder {@code holder}; it has no worker any more but keeps the id of the worker that served it,
 * so the job's session token for the vGPU still identifies the job to the tracker. A lend moved from lender to
 * lender keeps the ids of the workers that served it before in {@code formerWorkerIds}, for the same reason.
 */
public record Lend(
        int vgpu,
        String node,
        OptionalLong holder,
        OptionalInt gpu,
        Optional<Endpoint> worker,
        Optional<String> workerId,
        boolean home,
        List<String> formerWorkerIds) {
    public Lend {
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(holder, "holder");
        Objects.requireNonNull(gpu, "gpu");
        Objects.requireNonNull(worker, "worker");
        Objects.requireNonNull(workerId, "workerId");
        formerWorkerIds = List.copyOf(formerWorkerIds);
        if (vgpu < 0) {
            throw new IllegalArgumentException("vGPU index must not be negative, got " + vgpu);
        }
        LedgerValues.word("node", node);
        holder.ifPresent(job -> LedgerValues.atLeast("holder", job, 1));
        gpu.ifPresent(index -> LedgerValues.atLeast("gpu", index, 0));
        workerId.ifPresent(id -> LedgerValues.word("worker id", id));
        formerWorkerIds.forEach(id -> LedgerValues.word("former worker id", id));
        if (home
                ? worker.isPresent() || workerId.isEmpty() || holder.isEmpty() || gpu.isEmpty()
                : worker.isPresent() != workerId.isPresent()) {
            throw new IllegalArgumentException(
                    home
                            ? "a lend moved home has its grant holder, its GPU and its former worker's id, and no worker"
                            : "a lend's worker needs both its endpoint and its id");
        }
    }

    /** {@code worker ID at HOST:PORT} of the worker serving the lend now ({@link Migration.Worker#describe}), if any. */
    public Optional<String> servedBy() {
        return worker.isPresent() && workerId.isPresent()
                ? Optional.of(Migration.Worker.describe(workerId.get(), worker.get()))
                : Optional.empty();
    }

    /** A lend still served by a worker on another node (or being secured). */
    public Lend(
            int vgpu,
            String node,
            OptionalLong holder,
            OptionalInt gpu,
            Optional<Endpoint> worker,
            Optional<String> workerId) {
        this(vgpu, node, holder, gpu, worker, workerId, false, List.of());
    }

    /** The ids of every worker that served this lend for its job: the one its job's session token names among them. */
    public List<String> workerIds() {
        List<String> ids = new ArrayList<>(formerWorkerIds);
        workerId.ifPresent(ids::add);
        return ids;
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

    /** This lend moved home: GPU {@code localGpu} of the job's node {@code jobNode}, kept by grant holder {@code grant}. */
    public Lend movedHome(String jobNode, long grant, int localGpu) {
        return new Lend(
                vgpu,
                jobNode,
                OptionalLong.of(grant),
                OptionalInt.of(localGpu),
                Optional.empty(),
                Optional.of(workerId.orElseThrow(() -> new IllegalStateException("vGPU " + vgpu + " has no worker"))),
                true,
                formerWorkerIds);
    }

    /**
     * This lend moved to another lender: GPU {@code lenderGpu} of {@code lender}, kept by holder {@code holderJob},
     * served by the worker {@code id} at {@code endpoint}; the worker that served it so far becomes a former one.
     */
    public Lend movedTo(String lender, long holderJob, int lenderGpu, Endpoint endpoint, String id) {
        return new Lend(
                vgpu,
                lender,
                OptionalLong.of(holderJob),
                OptionalInt.of(lenderGpu),
                Optional.of(endpoint),
                Optional.of(id),
                false,
                workerIds());
    }
}
