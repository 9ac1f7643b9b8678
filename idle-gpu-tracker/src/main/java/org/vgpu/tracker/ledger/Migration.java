package org.vgpu.tracker.ledger;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

import org.vgpu.common.net.Endpoint;

/**
 * A move of borrowed vGPU {@code vgpu} of job {@code job} onto a GPU of node {@code node}: the job's own
 * node (home), or, {@code remote}, another lender's, as the ledger journals it before each step is taken.
 *
 * @param phase   {@link Phase#CLAIMING} while the grant holder that claims the target GPU is submitted
 *                and waits to run; {@link Phase#SENT} once the command went to the job's agent
 * @param remote  true: the target is a GPU worker on another lender (drain, remote to remote), run by a holder
 *                job; false: a GPU of the job's own node, kept by a grant holder
 * @param grant   the job that claims the target GPU ({@code vgpu-grant-JOB-vK} home, {@code vgpu-holder-JOB-vK}
 *                remote) once submitted
 * @param gpu     the target GPU's index on {@code node} once that job runs
 * @param worker  remote: the new worker's endpoint and id, once it announced itself
 * @param sent    when the command was queued for the job's agent
 * @param by      {@code hook} (the tracker's own decision) or {@code admin} ({@code vgpu migrate}, {@code vgpu drain})
 */
public record Migration(
        long id,
        long job,
        int vgpu,
        String node,
        boolean remote,
        Phase phase,
        OptionalLong grant,
        OptionalInt gpu,
        Optional<Worker> worker,
        Instant started,
        Optional<Instant> sent,
        String by) {
    public enum Phase {
        CLAIMING,
        SENT
    }

    /** A GPU worker that announced itself: where it listens and its id (which session tokens name). */
    public record Worker(Endpoint endpoint, String id) {
        public Worker {
            Objects.requireNonNull(endpoint, "endpoint");
            Objects.requireNonNull(id, "id");
            LedgerValues.word("worker id", id);
        }

        /** {@code worker ID at HOST:PORT}: how the tracker's errors and logs name a worker. */
        public String describe() {
            return describe(id, endpoint);
        }

        /**
         * {@code worker ID at HOST:PORT}, as the remote runtime names a worker too: the id first, which names the holder
         * job it runs in ({@code NODE-holder-JOB}) and is what an admin finds in Slurm and in the worker's own log; the
         * address says where it listened.
         */
        public static String describe(String id, Endpoint endpoint) {
            return "worker " + id + " at " + endpoint;
        }
    }

    public Migration {
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(phase, "phase");
        Objects.requireNonNull(grant, "grant");
        Objects.requireNonNull(gpu, "gpu");
        Objects.requireNonNull(worker, "worker");
        Objects.requireNonNull(started, "started");
        Objects.requireNonNull(sent, "sent");
        Objects.requireNonNull(by, "by");
        if (id < 1 || vgpu < 0) {
            throw new IllegalArgumentException("migration " + id + " of vGPU " + vgpu + ": id must be positive");
        }
        LedgerValues.atLeast("job", job, 1);
        LedgerValues.word("node", node);
        LedgerValues.word("migration's origin", by);
        grant.ifPresent(holder -> LedgerValues.atLeast("grant", holder, 1));
        gpu.ifPresent(index -> LedgerValues.atLeast("gpu", index, 0));
        if (phase == Phase.SENT
                && (grant.isEmpty() || gpu.isEmpty() || sent.isEmpty() || remote != worker.isPresent())) {
            throw new IllegalArgumentException(
                    "migration " + id + " was sent without its grant holder, GPU, time or (remote) worker");
        }
        if (!remote && worker.isPresent()) {
            throw new IllegalArgumentException("migration " + id + " home has no worker");
        }
    }

    /** An intent: nothing done in Slurm yet. */
    public static Migration intent(long id, long job, int vgpu, String node, boolean remote, Instant now, String by) {
        return new Migration(
                id,
                job,
                vgpu,
                node,
                remote,
                Phase.CLAIMING,
                OptionalLong.empty(),
                OptionalInt.empty(),
                Optional.empty(),
                now,
                Optional.empty(),
                by);
    }

    public Migration withGrant(long holder) {
        return new Migration(
                id, job, vgpu, node, remote, phase, OptionalLong.of(holder), gpu, worker, started, sent, by);
    }

    public Migration withWorker(Worker announced) {
        return new Migration(id, job, vgpu, node, remote, phase, grant, gpu, Optional.of(announced), started, sent, by);
    }

    public Migration sentAt(int targetGpu, Instant when) {
        return new Migration(
                id,
                job,
                vgpu,
                node,
                remote,
                Phase.SENT,
                grant,
                OptionalInt.of(targetGpu),
                worker,
                started,
                Optional.of(when),
                by);
    }
}
