package org.vgpu.tracker;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

import org.vgpu.tracker.ledger.Assembly;

/**
 * What the tracker knows at one moment, as {@link Tracker#status()} found it: live assemblies (with
 * the holders Slurm shows ended), migrations of borrowed vGPUs, held jobs waiting with their
 * reasons, the idle GPUs of each node, and the recently ended assemblies, oldest first. {@code vgpu
 * report} shows it (through {@code org.vgpu.tracker.report.Report}) and {@code /metrics} counts it.
 *
 * @param at          when the tracker composed it
 * @param endedTotals how many assemblies ended since the tracker started, by {@link Ended#why()}
 */
public record StatusReport(
        Instant at,
        List<Live> assemblies,
        List<Migration> migrations,
        List<Waiting> waiting,
        List<NodeIdle> idleGpus,
        List<Ended> ended,
        Map<String, Long> endedTotals) {
    public StatusReport {
        Objects.requireNonNull(at, "at");
        assemblies = List.copyOf(assemblies);
        migrations = List.copyOf(migrations);
        waiting = List.copyOf(waiting);
        idleGpus = List.copyOf(idleGpus);
        ended = List.copyOf(ended);
        endedTotals = Map.copyOf(endedTotals);
    }

    /**
     * A live assembly (the ledger's own record, which names no token).
     *
     * @param lostHolders its holders that Slurm shows ended
     * @param localGpus   the job's GPU indices on its node as Slurm allocated them; empty until the job runs
     * @param forwarded   what each borrowed vGPU (by index) forwarded to its lender, as the job's agent last
     *                    reported; a vGPU without an entry has not been reported yet
     * @param lostVgpus   why each borrowed vGPU (by index) that dies with its cancelled holder is lost (no evacuation
     *                    could move it); empty for the others
     */
    public record Live(
            Assembly assembly,
            List<Long> lostHolders,
            List<Integer> localGpus,
            Map<Integer, Forwarded> forwarded,
            Map<Integer, String> lostVgpus) {
        public Live {
            Objects.requireNonNull(assembly, "assembly");
            lostHolders = List.copyOf(lostHolders);
            localGpus = List.copyOf(localGpus);
            forwarded = Map.copyOf(forwarded);
            lostVgpus = Map.copyOf(lostVgpus);
        }

        /** An assembly of which nothing beyond the ledger's record is known. */
        public static Live of(Assembly assembly) {
            return new Live(assembly, List.of(), List.of(), Map.of(), Map.of());
        }
    }

    /** Calls and bytes a borrowed vGPU forwarded to its lender since the job opened it. */
    public record Forwarded(long calls, long bytes) {}

    /**
     * One move of a job's vGPU from one GPU to another, started by the tracker's migration hook.
     *
     * @param id            the hook's number for it, unique in the tracker's ledger
     * @param from          where the vGPU was, {@code NODE:GPU}
     * @param to            where it goes, {@code NODE:GPU}
     * @param reason        why the hook moved it, in words
     * @param finishedAt    when it ended; empty while it runs
     * @param blockedMillis how long the job's calls on the vGPU were held while it moved, once known
     * @param bytes         the device memory copied, once known
     * @param outcome       {@code running}, {@code done}, {@code failed}, ...: the hook's word
     */
    public record Migration(
            long id,
            long job,
            int vgpu,
            String from,
            String to,
            String reason,
            Instant startedAt,
            Optional<Instant> finishedAt,
            OptionalLong blockedMillis,
            OptionalLong bytes,
            String outcome) {
        public Migration {
            Objects.requireNonNull(from, "from");
            Objects.requireNonNull(to, "to");
            Objects.requireNonNull(reason, "reason");
            Objects.requireNonNull(startedAt, "startedAt");
            Objects.requireNonNull(finishedAt, "finishedAt");
            Objects.requireNonNull(blockedMillis, "blockedMillis");
            Objects.requireNonNull(bytes, "bytes");
            Objects.requireNonNull(outcome, "outcome");
        }
    }

    /** A held vgpu job without an assembly, and why. */
    public record Waiting(long job, String user, int vgpus, String reason) {}

    /** The GPUs of a node that no job holds, by index, at the tracker's last look at Slurm. */
    public record NodeIdle(String node, List<Integer> gpus) {
        public NodeIdle {
            Objects.requireNonNull(node, "node");
            gpus = List.copyOf(gpus);
        }
    }

    /** An assembly that ended: {@code why} is done, gone, ended or aborted; an aborted one says what went wrong. */
    public record Ended(
            long job,
            String user,
            String node,
            int vgpus,
            int borrowed,
            String why,
            Instant at,
            Optional<String> reason) {}
}
