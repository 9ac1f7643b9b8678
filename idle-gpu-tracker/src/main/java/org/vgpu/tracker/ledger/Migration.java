package org.vgpu.tracker.ledger;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * A move of borrowed vGPU {@code vgpu} of job {@code job} onto a GPU of node {@code node} (the job's
 * own node: home), as the ledger journals it before each step is taken.
 *
 * @param phase   {@link Phase#CLAIMING} while the grant holder that claims the target GPU is submitted
 *                and waits to run; {@link Phase#SENT} once the command went to the job's agent
 * @param grant   the grant holder job ({@code vgpu-grant-JOB-vK}) once submitted
 * @param gpu     the target GPU's index on {@code node} once the grant holder runs
 * @param sent    when the command was queued for the job's agent
 * @param by      {@code hook} (the tracker's own decision) or {@code admin} ({@code vgpu migrate}, {@code vgpu drain})
 */
public record Migration(
        long id,
        long job,
        int vgpu,
        String node,
        Phase phase,
        OptionalLong grant,
        OptionalInt gpu,
        Instant started,
        Optional<Instant> sent,
        String by) {
    public enum Phase {
        CLAIMING,
        SENT
    }

    public Migration {
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(phase, "phase");
        Objects.requireNonNull(grant, "grant");
        Objects.requireNonNull(gpu, "gpu");
        Objects.requireNonNull(started, "started");
        Objects.requireNonNull(sent, "sent");
        Objects.requireNonNull(by, "by");
        if (id < 1 || vgpu < 0) {
            throw new IllegalArgumentException("migration " + id + " of vGPU " + vgpu + ": id must be positive");
        }
        if (phase == Phase.SENT && (grant.isEmpty() || gpu.isEmpty() || sent.isEmpty())) {
            throw new IllegalArgumentException("migration " + id + " was sent without its grant holder, GPU or time");
        }
    }

    /** An intent: nothing done in Slurm yet. */
    public static Migration intent(long id, long job, int vgpu, String node, Instant now, String by) {
        return new Migration(
                id,
                job,
                vgpu,
                node,
                Phase.CLAIMING,
                OptionalLong.empty(),
                OptionalInt.empty(),
                now,
                Optional.empty(),
                by);
    }

    public Migration withGrant(long holder) {
        return new Migration(id, job, vgpu, node, phase, OptionalLong.of(holder), gpu, started, sent, by);
    }

    public Migration sentAt(int targetGpu, Instant when) {
        return new Migration(
                id, job, vgpu, node, Phase.SENT, grant, OptionalInt.of(targetGpu), started, Optional.of(when), by);
    }
}
